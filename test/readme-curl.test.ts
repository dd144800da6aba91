import { execFile } from 'node:child_process'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { generateSync } from 'otplib'
import t from 'tap'
import { databaseEnv, startServer } from './server/process.js'
import { startMailServer } from './mail-server.js'

const run = promisify(execFile)

/** A curl command of the documentation, as a reader would paste it. */
interface Example {
  /** `README.md:566`, where it starts. */
  where: string
  /** The command without its trailing comment; continued lines (`\`) stay continued. */
  command: string
  /** The comment after it (`304, no body`, `ETag: "1234"`), if any. */
  comment: string
  /** The variable assignments of its block before it (`key=$(…)`), which it uses. */
  setup: string[]
}

/** Splits a shell command at its comment: a `#` outside quotes, at a word's start. */
function splitComment (command: string): [string, string] {
  let quote = ''
  for (let i = 0; i < command.length; i++) {
    const c = command[i]!
    if (quote) {
      if (c === quote) quote = ''
    } else if (c === '\'' || c === '"') {
      quote = c
    } else if (c === '#' && /\s/.test(command[i - 1] ?? ' ')) {
      return [command.slice(0, i).trimEnd(), command.slice(i + 1).trim()]
    }
  }
  return [command, '']
}

/** Every curl command of every fenced block of `file`, in order. */
function curlExamples (file: string, text: string): Example[] {
  const examples: Example[] = []
  for (const fence of text.matchAll(/^```[^\n]*\n([\s\S]*?)^```/gm)) {
    const firstLine = text.slice(0, fence.index).split('\n').length + 1
    const lines = fence[1]!.split('\n')
    const setup: string[] = []
    for (let i = 0; i < lines.length; i++) {
      const start = i
      let command = lines[i]!
      while (command.endsWith('\\') && i + 1 < lines.length) command += '\n' + lines[++i]
      if (/^[A-Za-z_]\w*=/.test(command)) setup.push(command)
      if (!/^\s*curl\s/.test(command)) continue
      const [code, comment] = splitComment(command.trim())
      examples.push({ where: `${file}:${firstLine + start}`, command: code, comment, setup: [...setup] })
    }
  }
  return examples
}

const files = ['README.md', ...(await readdir('docs')).filter(name => name.endsWith('.md')).sort().map(name => `docs/${name}`)]
const documents = await Promise.all(files.map(async file => ({ file, text: await readFile(file, 'utf8') })))
const examples = documents.flatMap(({ file, text }) => curlExamples(file, text))

// Lines that cannot run against a test server, each with the reason. None today: every curl
// line of the README and docs/ runs below.
const excluded = new Set<string>([])

t.test('every curl line of the README and docs/ is found in a fenced block', async t => {
  for (const { file, text } of documents) {
    // Counted apart from the parsing: a curl line the parser missed (outside a fence, say)
    // would otherwise never be run, and never fail.
    const written = text.match(/^\s*curl\s/gm)?.length ?? 0
    t.equal(examples.filter(example => example.where.startsWith(`${file}:`)).length, written, `${file}: all ${written} curl lines`)
  }
  t.ok(examples.some(example => example.where.startsWith('README.md:')), 'the README\'s among them')
  for (const where of excluded) t.ok(examples.some(example => example.where === where), `the excluded ${where} is a curl line`)
})

t.test('every curl line of the README and docs/ runs as written against the service, in order: exit 0, the status it shows', async t => {
  // Pasted into single-quoted JSON, as a reader types theirs: no quote in it.
  const adminPassword = 'correct horse battery staple'
  // The password reset's and the verification's mails, read back for their tokens.
  const mail = await startMailServer(t)
  const server = await startServer({
    SMTP_URL: mail.url,
    ...await databaseEnv(t),
    // The README logs in as the administrator that the quick start makes.
    ADMIN_EMAIL: 'admin@example.com',
    ADMIN_PASSWORD: adminPassword,
    // Its examples log in, and check a password, a few times within a minute.
    AUTH_RATE_LIMIT_EMAIL: '1000'
  })
  t.teardown(() => server.kill())
  const dir = await mkdtemp(path.join(os.tmpdir(), 'readme-curl-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))

  // What the examples' placeholders stand for, as earlier examples' answers make it known.
  const state = { password: adminPassword, token: '', refresh: '', key: { id: 0, secret: '' }, totp: { secret: '', step: 0 }, mfaToken: '' }
  /** The authenticator app's next code: of now, or the step after the last one sent (a code works once). */
  const nextCode = () => {
    state.totp.step = Math.max(Math.floor(Date.now() / 30_000), state.totp.step + 1)
    return generateSync({ secret: state.totp.secret, epoch: state.totp.step * 30 })
  }
  const tags = new Map<string, string>()
  const api = async (route: string, init: RequestInit = {}) => {
    const res = await fetch(`${server.url}${route}`, { ...init, headers: { 'content-type': 'application/json', ...init.headers } })
    return { status: res.status, body: await res.json() as { data: unknown } }
  }
  const login = async () => {
    const { body } = await api('/api/login', { method: 'POST', body: JSON.stringify({ email: 'admin@example.com', password: state.password }) })
    return body.data as string
  }
  const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } })
  /** The latest access token, or a new login's once an example (a logout) has ended its session. */
  const accessToken = async () => {
    if (!state.token || (await api('/api/profile', bearer(state.token))).status !== 200) state.token = await login()
    return state.token
  }
  /** A session of the administrator's other than the examples' own: another device's. */
  const otherSession = async () => {
    const { body } = await api('/api/sessions', bearer(await login()))
    return String((body.data as { id: number, current: boolean }[]).find(session => session.current)!.id)
  }

  /**
   * The token of the next mail linking to `page` (mails to other pages kept for their turn). A
   * verification's comes from a user the test registers: the examples' administrator has a
   * verified address.
   */
  const otherMails: string[] = []
  const mailedToken = async (page: string) => {
    const pattern = new RegExp(`${page}\\?token=([\\w-]+)`)
    if (page === 'verify-email') {
      const email = `reader${Date.now()}@example.com`
      await api('/api/register', { method: 'POST', body: JSON.stringify({ name: 'Reader', email, password: adminPassword, c_password: adminPassword }) })
    }
    const kept = otherMails.findIndex(text => pattern.test(text))
    if (kept !== -1) return pattern.exec(otherMails.splice(kept, 1)[0]!)![1]!
    for (;;) {
      const text = (await mail.next()).text ?? ''
      const token = pattern.exec(text)?.[1]
      if (token !== undefined) return token
      otherMails.push(text)
    }
  }

  /** The example as it runs here: on the test server, its placeholders replaced. */
  async function substitute (example: Example): Promise<string> {
    let command = example.command.replaceAll('localhost:3000', new URL(server.url).host)
    for (const [placeholder, tag] of tags) command = command.replaceAll(placeholder, tag)
    if (command.includes('eyJ…')) command = command.replaceAll('eyJ…', await accessToken())
    if (command.includes('/api/sessions/11')) command = command.replaceAll('/api/sessions/11', `/api/sessions/${await otherSession()}`)
    if (command.includes('"token":"Vb0k…"')) command = command.replaceAll('Vb0k…', await mailedToken(command.includes('/api/email/verify') ? 'verify-email' : 'reset-password'))
    return command
      .replace(/("(?:current_)?password":")…"/g, (_, field) => `${field}${state.password}"`)
      .replaceAll('Xq3…', state.refresh)
      .replace('"code":"…"', () => `"code":"${nextCode()}"`)
      .replaceAll('Pw8n…', state.mfaToken)
      .replaceAll('sk_4Gx0aQ2b…', state.key.secret)
      .replace(/(\/api\/keys\/|key_id\[eq\]=)3\b/g, (_, before) => `${before}${state.key.id}`)
  }

  for (const example of examples) {
    if (excluded.has(example.where)) continue
    const command = await substitute(example)
    t.notMatch(command, /…/, `${example.where}: every placeholder stands for a real value`)
    const body = path.join(dir, 'body')
    const headers = path.join(dir, 'headers')
    // The answer's status on stdout, its headers and body in files; the command is otherwise
    // run as written, its options (-s, -g, -i) and the shell's quoting included.
    const script = [...example.setup, command.replace(/^curl\s/, 'curl -o "$1" -D "$2" -w \'%{http_code}\' ')].join('\n')
    const { code, stdout } = await run('sh', ['-c', script, 'sh', body, headers])
      .then(({ stdout }) => ({ code: 0, stdout }), (error: { code: number, stdout: string }) => error)
    t.equal(code, 0, `${example.where}: curl exits 0`, { command: example.command })
    if (code !== 0) continue
    const status = Number(stdout)
    // The body alone (with -i, curl writes the headers before it).
    const text = (await readFile(body, 'utf8')).replace(/^HTTP\/[\s\S]*?\r\n\r\n/, '')
    const shown = /^(\d{3})\b/.exec(example.comment)?.[1]
    if (shown) t.equal(status, Number(shown), `${example.where}: answers ${shown}, as the README shows`, { command, body: text })
    else t.ok(status >= 200 && status < 300, `${example.where}: answers 2xx (${status})`, { command, body: text })

    // What the answer makes known to the examples that follow (a JSON one: an export is CSV or NDJSON).
    const answer = /^content-type: application\/json/im.test(await readFile(headers, 'utf8')) ? JSON.parse(text) : {}
    if (answer.token_type === 'Bearer') Object.assign(state, { token: answer.data, refresh: answer.refresh_token })
    if (typeof answer.data?.otpauth_uri === 'string') state.totp = { secret: answer.data.secret, step: 0 }
    if (answer.mfa_required === true) state.mfaToken = answer.mfa_token
    if (typeof answer.secret === 'string' && answer.secret.startsWith('sk_')) state.key = { id: answer.data.id, secret: answer.secret }
    const newPassword = /"password":"([^"]*)"/.exec(command)?.[1]
    if (newPassword && status < 300) state.password = newPassword
    const tag = /^etag: (.*?)\r?$/im.exec(await readFile(headers, 'utf8'))?.[1]
    const named = /ETag: ("[^"]*")/.exec(example.comment)?.[1]
    if (named && tags.has(named)) t.equal(tag, tags.get(named), `${example.where}: the ETag is the one the README names ${named} above`)
    else if (named) tags.set(named, tag!)
  }
})
