import { randomInt } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
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
  /**
   * Runs `work` (a look-up, a write, a mail) after the request is answered, within a second, at
   * a random moment: what a known address costs does not fall on the requests that follow the
   * answer, whose times would tell it. A failure is logged; the instance waits for it as it closes.
   */
  later (request: FastifyRequest, what: string, work: () => Promise<void>): void
  /** Resolves once the work `later` has started so far has ended (as the instance closes, it waits so). */
  settled (): Promise<void>
}

/** Work done `later` starts within this long of its request's answer. */
const LATER_MS = 1_000

/**
 * Outgoing mail through SMTP (nodemailer), for the routes that send a link by mail (password
 * reset, e-mail verification). Off without SMTP_URL: those routes answer 503 `mail_unavailable`.
 */
export default fp(async (fastify) => {
  const config = fastify.config.mail
  // Loaded only where mail is on.
  const transport = config === null ? undefined : (await import('nodemailer')).default.createTransport(config.smtpUrl)
  const pending = new Set<Promise<void>>()
  fastify.decorate('mail', {
    publicUrl: config?.publicUrl ?? '',
    ensureOn () {
      if (transport === undefined) throw new CodedError('mail_unavailable', 'This service sends no mail (SMTP_URL is not set): ask an administrator')
    },
    async send (message) {
      this.ensureOn()
      await transport!.sendMail({ from: config!.from, ...message })
    },
    later (request, what, work) {
      const done: Promise<void> = sleep(randomInt(LATER_MS)).then(work)
        .catch((error: unknown) => request.log.warn({ err: error }, `could not send ${what}`))
        .finally(() => pending.delete(done))
      pending.add(done)
    },
    async settled () {
      // Work may start more (a mail asked again sends one): until none is left.
      while (pending.size > 0) await Promise.allSettled(pending)
    }
  } satisfies Mail)
  fastify.addHook('onClose', async () => {
    await fastify.mail.settled()
    transport?.close()
  })
}, { name: 'mail', dependencies: ['config'] })
