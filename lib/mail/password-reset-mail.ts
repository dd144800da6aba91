import type { Message } from './message.js'

/** `text` with the characters HTML gives a meaning to escaped. */
const escaped = (text: string) => text.replace(/[&<>"']/g, char => `&#${char.charCodeAt(0)};`)

/** The mail of a password reset: the link to the page that sets a new password, in text and HTML. */
export function passwordResetMail (to: string, link: string, validMinutes: number): Message {
  return {
    to,
    subject: 'Reset your password',
    text: 'Someone, you we hope, asked to reset the password of this address\'s account.\n\n' +
      `To choose a new one, open this link within ${validMinutes} minutes:\n\n${link}\n\n` +
      'It works once. If you did not ask, ignore this mail: your password stays as it is.\n',
    html: '<p>Someone, you we hope, asked to reset the password of this address\'s account.</p>' +
      `<p>To choose a new one, open this link within ${validMinutes} minutes:</p>` +
      `<p><a href="${escaped(link)}">Reset your password</a></p>` +
      '<p>It works once. If you did not ask, ignore this mail: your password stays as it is.</p>'
  }
}
