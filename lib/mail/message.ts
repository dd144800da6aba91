/** A mail to one address, in plain text and HTML (plugins/app/mail.ts sends it). */
export interface Message {
  to: string
  subject: string
  text: string
  html: string
}
