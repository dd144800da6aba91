import type { AddressInfo } from 'node:net'
import type { Test } from 'tap'
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
