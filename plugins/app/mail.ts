import fp from 'fastify-plugin'
import nodemailer from 'nodemailer'
import { CodedError } from '../../lib/http/error-codes.js'
import type { Message } from '../../lib/mail/message.js'

declare module 'fastify' {
  interface FastifyInstance {
    mail: Mail
  }
}

export interface Mail {
  /** Where the links of the mails point (PUBLIC_URL), without a trailing `/`. */
  publicUrl: string
  /** 503 `mail_unavailable` unless SMTP_URL is set: a route that sends mail says so before it does anything. */
  ensureOn (): void
  /** Sends the message through the SMTP server of SMTP_URL, from MAIL_FROM. */
  send (message: Message): Promise<void>
}

/**
 * Outgoing mail through SMTP (nodemailer), for the routes that send a link by mail (password
 * reset, e-mail verification). Off without SMTP_URL: those routes answer 503 `mail_unavailable`.
 */
export default fp(async (fastify) => {
  const config = fastify.config.mail
  const transport = config === null ? undefined : nodemailer.createTransport(config.smtpUrl)
  fastify.decorate('mail', {
    publicUrl: config?.publicUrl ?? '',
    ensureOn () {
      if (transport === undefined) throw new CodedError('mail_unavailable', 'This service sends no mail (SMTP_URL is not set): ask an administrator')
    },
    async send (message) {
      this.ensureOn()
      await transport!.sendMail({ from: config!.from, ...message })
    }
  } satisfies Mail)
  if (transport !== undefined) fastify.addHook('onClose', async () => transport.close())
}, { name: 'mail', dependencies: ['config'] })
