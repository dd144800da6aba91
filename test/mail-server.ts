import type { AddressInfo } from 'node:net'
import type { Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { build, type ConfigChange } from './helper.js'
import { SMTPServer } from 'smtp-server'
import { simpleParser, type ParsedMail } from 'mailparser'

/**
 * A real SMTP server on 127.0.0.1 for the tests (the `smtp-server` package), which keeps every
 * message it is sent, parsed (`mailparser`): `next()` is the next one to arrive, in order.
 */
export async function startMailServer (t: Test) {
  const arrived: ParsedMail[] = []
  const waiting: Array<(mail: ParsedMail) => void> = []
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData (stream, _session, callback) {
      simpleParser(stream).then(mail => {
        const waiter = waiting.shift()
        if (waiter === undefined) arrived.push(mail)
        else waiter(mail)
        callback()
      }, callback)
    }
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.server.address() as AddressInfo
  t.teardown(() => new Promise<void>(resolve => server.close(() => resolve())))
  return {
    url: `smtp://127.0.0.1:${port}`,
    /** The next message to arrive (one that arrived already first). */
    next: async (): Promise<ParsedMail> => arrived.shift() ?? new Promise(resolve => waiting.push(resolve)),
    /** How many arrived and were not read yet. */
    get unread () { return arrived.length }
  }
}

/** Where the tests' mails link to. */
export const PUBLIC_URL = 'https://records.example.com'

/** An app that sends mail to a real SMTP server of the test's, with `change` made to its configuration too. */
export async function buildWithMail (t: Test, change: ConfigChange = {}): Promise<{ app: FastifyInstance, mail: Awaited<ReturnType<typeof startMailServer>> }> {
  const mail = await startMailServer(t)
  const app = await build(t, config => {
    config.mail = { smtpUrl: mail.url, from: 'Student Records <records@example.com>', publicUrl: PUBLIC_URL }
    if (typeof change === 'function') change(config)
    else Object.assign(config, change)
  })
  return { app, mail }
}

/** The addresses a mail went to. */
export const recipients = (mail: ParsedMail): string[] => mail.to && !Array.isArray(mail.to) ? mail.to.value.map(address => address.address ?? '') : []
