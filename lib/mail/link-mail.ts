import type { Message } from './message.js'

/** `text` with the characters HTML gives a meaning to escaped. */
const escaped = (text: string) => text.replace(/[&<>"']/g, char => `&#${char.charCodeAt(0)};`)

/** A mail whose point is one link: why it came, the link, and what to do if it was not asked for. */
interface LinkMail {
  subject: string
  /** Why the mail came, a sentence. */
  why: string
  /** What the link does, as an instruction ending before the validity: `To choose a new one, open this link`. */
  action: string
  /** The link's text in HTML. */
  label: string
  /** How long the link works, in words: `60 minutes`. */
  valid: string
  /** What happens if the reader did not ask. */
  ignore: string
}

/** The mail of `mail` to `to` with `link`, in plain text and HTML. */
function linkMail (to: string, link: string, mail: LinkMail): Message {
  return {
    to,
    subject: mail.subject,
    text: `${mail.why}\n\n${mail.action} within ${mail.valid}:\n\n${link}\n\nIt works once. ${mail.ignore}\n`,
    html: `<p>${escaped(mail.why)}</p><p>${escaped(mail.action)} within ${escaped(mail.valid)}:</p>` +
      `<p><a href="${escaped(link)}">${escaped(mail.label)}</a></p><p>It works once. ${escaped(mail.ignore)}</p>`
  }
}

/** The mail of a password reset: the link to the page that sets a new password. */
export const passwordResetMail = (to: string, link: string, validMinutes: number): Message => linkMail(to, link, {
  subject: 'Reset your password',
  why: 'Someone, you we hope, asked to reset the password of this address\'s account.',
  action: 'To choose a new one, open this link',
  label: 'Reset your password',
  valid: `${validMinutes} minutes`,
  ignore: 'If you did not ask, ignore this mail: your password stays as it is.'
})

/** The mail that verifies an address: a new account's, or the one an account is changing to. */
export const addressVerificationMail = (to: string, link: string, validHours: number, change: boolean): Message => linkMail(to, link, {
  subject: 'Verify your e-mail address',
  why: change
    ? 'Someone, you we hope, asked to change the e-mail address of an account to this one.'
    : 'Someone, you we hope, made an account with this e-mail address.',
  action: change ? 'To make this the account\'s address, open this link' : 'To verify the address, open this link',
  label: 'Verify your e-mail address',
  valid: `${validHours} hours`,
  ignore: change
    ? 'If you did not ask, ignore this mail: the account keeps its address.'
    : 'If you did not ask, ignore this mail: the address stays unverified.'
})
