import { createHash, randomUUID } from 'node:crypto'
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { build, lockWaiters, within } from '../../helper.js'
import { bearer, PASSWORD, sessionsOf, userWithRoles } from './accounts.js'
import { SESSIONS_PER_USER } from '../../../routes/api/(authenticated)/sessions/repository.js'

interface Tokens { success: true, data: string, refresh_token: string, expires_in: number, token_type: 'Bearer' }

const claims = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { sid: number, jti: string, iat: number, exp: number }

async function logIn (app: FastifyInstance, email: string, userAgent = 'test agent'): Promise<Tokens> {
  const res = await app.inject({ method: 'POST', url: '/api/login', headers: { 'user-agent': userAgent }, payload: { email, password: PASSWORD } })
  if (res.statusCode !== 200) throw new Error(`login failed: ${res.body}`)
  return res.json()
}

const refresh = (app: FastifyInstance, token: string) =>
  app.inject({ method: 'POST', url: '/api/token/refresh', payload: { refresh_token: token } })
const profile = async (app: FastifyInstance, token: string) =>
  (await app.inject({ url: '/api/profile', headers: bearer(token) })).statusCode

t.test('a login starts a session: an access token of it, and a refresh token the database keeps only as its digest', async t => {
  const app = await build(t, config => { config.auth.jwtTtlSeconds = 900 })
  const { email } = await userWithRoles(app, ['User'])
  const tokens = await logIn(app, email)
  t.match(tokens, { success: true, refresh_token: /^[A-Za-z0-9_-]{43}$/, expires_in: 900, token_type: 'Bearer' })
  const { sid, iat, exp } = claims(tokens.data)
  t.equal(exp - iat, 900)
  const kept = await app.knex('refresh_tokens').where('session_id', sid).select('hash')
  t.same(kept.map(row => row.hash.toString('hex')), [createHash('sha256').update(tokens.refresh_token).digest('hex')], 'one token, as its SHA-256')
})

t.test('a refresh spends the token for a new pair of the same session; a repeat within the grace gets the same pair', async t => {
  const app = await build(t)
  const { email } = await userWithRoles(app, ['User'])
  const first = await logIn(app, email)

  const res = await refresh(app, first.refresh_token)
  t.equal(res.statusCode, 200)
  const second: Tokens = res.json()
  t.match(second, { success: true, token_type: 'Bearer', expires_in: 3600 })
  t.not(second.refresh_token, first.refresh_token)
  t.not(second.data, first.data)
  t.equal(claims(second.data).sid, claims(first.data).sid, 'the same session')
  t.equal(await profile(app, second.data), 200)
  t.equal(await profile(app, first.data), 200, 'the earlier access token holds until it expires')

  const again = await refresh(app, first.refresh_token)
  t.equal(again.statusCode, 200, 'a second tab refreshing with the same token')
  t.same(again.json(), second, 'gets the very same pair')

  const third = await refresh(app, second.refresh_token)
  t.equal(third.statusCode, 200, 'the successor refreshes in turn')
  t.equal(await profile(app, third.json().data), 200)
})

t.test('concurrent refreshes of one token all get the same pair, and the session lives on', async t => {
  const app = await build(t)
  const { email } = await userWithRoles(app, ['User'])
  const { refresh_token: token } = await logIn(app, email)
  const answers = await Promise.all(Array.from({ length: 8 }, () => refresh(app, token)))
  t.same(answers.map(res => res.statusCode), Array(8).fill(200))
  t.equal(new Set(answers.map(res => res.body)).size, 1, 'one pair for all')
  const { refresh_token: successor, data } = answers[0]!.json() as Tokens
  t.equal(await profile(app, data), 200)
  t.equal((await refresh(app, successor)).statusCode, 200)
  const kept = await app.knex('refresh_tokens').where('session_id', claims(data).sid).count({ n: '*' }).first()
  t.equal(Number(kept!.n), 3, 'the first, its one successor, and the next')
})

t.test('a spent token presented after the grace ends the whole session, its access tokens at once', async t => {
  const app = await build(t)
  const { email } = await userWithRoles(app, ['User'])
  const first = await logIn(app, email)
  const other = await logIn(app, email)
  const second: Tokens = (await refresh(app, first.refresh_token)).json()
  t.equal(await profile(app, second.data), 200)
  // As if 11 s had passed: the default grace is 10 s.
  await app.knex('refresh_tokens').whereNotNull('spent_at').update({ spent_at: app.knex.raw('spent_at - interval \'11 seconds\'') })

  const reused = await refresh(app, first.refresh_token)
  t.equal(reused.statusCode, 401)
  t.match(reused.json(), { success: false, statusCode: 401, message: /spent before/ })
  t.equal(reused.headers['www-authenticate'], 'Bearer realm="api"')
  t.equal(await profile(app, second.data), 401, 'the session\'s newest access token is refused')
  t.equal(await profile(app, first.data), 401, 'and its first')
  t.match((await refresh(app, second.refresh_token)).json(), { statusCode: 401, message: 'The session has ended' }, 'its live refresh token gets nothing')
  t.equal(await profile(app, other.data), 200, 'another session of the same user lives on')
  const [ended] = await app.knex('sessions').where('id', claims(first.data).sid).select('end_reason')
  t.equal(ended.end_reason, 'refresh token reused')
})

t.test('refresh tokens that get nothing: unknown, malformed, expired, of an expired session; 401 with the error body', async t => {
  const app = await build(t)
  const { email } = await userWithRoles(app, ['User'])
  for (const token of ['x', 'A'.repeat(43), '../../etc/passwd', 'é'.repeat(43)]) {
    const res = await refresh(app, token)
    t.equal(res.statusCode, 401, JSON.stringify(token))
    t.match(res.json(), { success: false, statusCode: 401, error: 'Unauthorized', message: 'The refresh token is invalid or has expired' })
  }
  t.match((await app.inject({ method: 'POST', url: '/api/token/refresh', payload: {} })).json(), { statusCode: 400, data: { refresh_token: [String] } })
  t.equal((await app.inject({ method: 'POST', url: '/api/token/refresh', payload: { refresh_token: 'a'.repeat(43), extra: 1 } })).statusCode, 400)

  const expired = await logIn(app, email)
  await app.knex('refresh_tokens').update({ expires_at: app.knex.raw('now() - interval \'1 second\'') })
  t.equal((await refresh(app, expired.refresh_token)).statusCode, 401, 'past REFRESH_TTL')

  const old = await logIn(app, email)
  await app.knex('sessions').where('id', claims(old.data).sid).update({ expires_at: app.knex.raw('now() - interval \'1 second\'') })
  t.match((await refresh(app, old.refresh_token)).json(), { statusCode: 401, message: 'The session has ended' }, 'past SESSION_MAX_AGE')
})

t.test('no access token outlives its session: near SESSION_MAX_AGE, expires_in shrinks to what is left', async t => {
  const app = await build(t, config => { config.auth.sessionMaxAgeSeconds = 120 })
  const { email } = await userWithRoles(app, ['User'])
  const tokens = await logIn(app, email)
  t.ok(tokens.expires_in <= 120 && tokens.expires_in >= 118, `expires_in ${tokens.expires_in}`)
  const { iat, exp } = claims(tokens.data)
  t.equal(exp - iat, tokens.expires_in)
  const refreshed: Tokens = (await refresh(app, tokens.refresh_token)).json()
  t.ok(refreshed.expires_in <= 120)
})

t.test('refreshes are counted per session and per client IP, like logins', async t => {
  const app = await build(t, config => { config.auth.rateLimit.perEmail = 3; config.auth.rateLimit.perIp = 6 })
  const { email } = await userWithRoles(app, ['User'])
  let token = (await logIn(app, email)).refresh_token
  const spentFirst = token
  for (let i = 0; i < 3; i++) {
    const res = await refresh(app, token)
    t.equal(res.statusCode, 200)
    token = res.json().refresh_token
  }
  const limited = await refresh(app, token)
  t.equal(limited.statusCode, 429, 'the fourth refresh of one session in a window')
  t.ok(Number(limited.headers['retry-after']) > 0)
  // Past the limit, a spent token past its grace still ends its session: a thief who keeps the
  // session's count at its limit does not shield it.
  await app.knex('refresh_tokens').whereNotNull('spent_at').update({ spent_at: app.knex.raw('spent_at - interval \'11 seconds\'') })
  const [firstSpent] = await app.knex('refresh_tokens').whereNotNull('spent_at').orderBy('issued_at').limit(1).select('session_id')
  const reused = await app.inject({ method: 'POST', url: '/api/token/refresh', payload: { refresh_token: spentFirst } })
  t.equal(reused.statusCode, 401, 'a reuse, over the limit')
  t.match(reused.json(), { message: /spent before/ })
  t.equal(reused.headers['retry-after'], undefined)
  t.equal((await app.knex('sessions').where('id', firstSpent.session_id).first('end_reason')).end_reason, 'refresh token reused')
  const other = await logIn(app, email)
  t.equal((await refresh(app, other.refresh_token)).statusCode, 200, 'another session is counted apart')
  t.equal((await refresh(app, 'c'.repeat(43))).statusCode, 429, 'the client IP\'s count: past six')
})

t.test('a user lists their sessions and ends one; another user\'s is 404; logout ends the current one, ?scope=all every one', async t => {
  const app = await build(t)
  const { email } = await userWithRoles(app, ['User'])
  const stranger = await userWithRoles(app, ['Admin'])
  const laptop = await logIn(app, email, 'laptop')
  const phone = await logIn(app, email, 'phone')

  const listed = await app.inject({ url: '/api/sessions', headers: bearer(laptop.data) })
  t.equal(listed.statusCode, 200)
  const sessions = listed.json().data as { id: number, user_agent: string, ip: string, current: boolean }[]
  // The first is the login of userWithRoles.
  t.same(sessions.map(s => [s.user_agent, s.current]).sort(), [['laptop', true], ['lightMyRequest', false], ['phone', false]])
  t.equal(sessions[0]!.ip, '127.0.0.1')
  const phoneId = claims(phone.data).sid

  // While the phone's session is locked (its owner's write under way), a stranger's try at it
  // is 404 at once: it neither waits on that lock nor takes one.
  const owner = await app.knex.transaction()
  t.teardown(() => owner.isCompleted() || owner.rollback())
  await owner('sessions').where('id', phoneId).forUpdate()
  const answered = app.inject({ method: 'DELETE', url: `/api/sessions/${phoneId}`, headers: bearer(stranger.token) })
  const waiting = new Promise(resolve => setTimeout(resolve, 5_000, 'still waiting')).then(String)
  t.equal(await Promise.race([answered.then(() => 'answered'), waiting]), 'answered', 'answered while the owner holds the lock')
  await owner.rollback()
  const foreign = await answered
  t.equal(foreign.statusCode, 404, 'someone else\'s session')
  t.equal(foreign.json().message, `Session ${phoneId} not found`, 'as unknown as none')
  t.equal(await profile(app, phone.data), 200)
  t.equal((await app.inject({ method: 'DELETE', url: '/api/sessions/99999999999999999999', headers: bearer(laptop.data) })).statusCode, 404)
  t.equal((await app.inject({ method: 'DELETE', url: '/api/sessions/0', headers: bearer(laptop.data) })).statusCode, 400)

  const ended = await app.inject({ method: 'DELETE', url: `/api/sessions/${phoneId}`, headers: bearer(laptop.data) })
  t.equal(ended.statusCode, 200)
  t.match(ended.json(), { success: true, data: { id: phoneId, user_agent: 'phone', current: false } })
  t.equal(await profile(app, phone.data), 401, 'its access token is refused at once')
  t.equal((await refresh(app, phone.refresh_token)).statusCode, 401, 'its refresh token gets nothing')
  t.equal((await app.inject({ method: 'DELETE', url: `/api/sessions/${phoneId}`, headers: bearer(laptop.data) })).statusCode, 404, 'ended already')
  t.equal(await profile(app, laptop.data), 200)

  const tablet = await logIn(app, email, 'tablet')
  t.equal((await app.inject({ url: '/api/logout', headers: bearer(laptop.data) })).statusCode, 200)
  t.equal(await profile(app, laptop.data), 401, 'logout ends the current session')
  t.equal((await refresh(app, laptop.refresh_token)).statusCode, 401)
  t.equal(await profile(app, tablet.data), 200, 'and only that one')

  const desk = await logIn(app, email, 'desk')
  t.equal((await app.inject({ url: '/api/logout?scope=all', headers: bearer(desk.data) })).statusCode, 200)
  t.same([await profile(app, desk.data), await profile(app, tablet.data)], [401, 401])
  t.equal((await refresh(app, tablet.refresh_token)).statusCode, 401)
})

t.test('a password change ends the user\'s other sessions; a user-edit holder\'s change of another user\'s password ends all of theirs', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  const { id, email } = await userWithRoles(app, ['User'])
  const one = await logIn(app, email)
  const two = await logIn(app, email)
  const password = { password: 'another good password', c_password: 'another good password' }

  const changed = await app.inject({ method: 'PATCH', url: `/api/users/${admin.id}`, headers: bearer(admin.token), payload: { ...password, current_password: PASSWORD } })
  t.equal(changed.statusCode, 200)
  t.equal(await profile(app, admin.token), 200, 'the admin\'s own session stays')

  t.equal((await app.inject({ method: 'PATCH', url: `/api/users/${id}`, headers: bearer(admin.token), payload: password })).statusCode, 200)
  t.same([await profile(app, one.data), await profile(app, two.data)], [401, 401])
  t.same([(await refresh(app, one.refresh_token)).statusCode, (await refresh(app, two.refresh_token)).statusCode], [401, 401])
})

t.test('a session\'s last use is written at most once a minute', async t => {
  const app = await build(t)
  const { email } = await userWithRoles(app, ['User'])
  const tokens = await logIn(app, email)
  const sid = claims(tokens.data).sid
  const lastUsed = async () => (await app.knex('sessions').where('id', sid).first(app.knex.raw('extract(epoch from now() - last_used_at)::float8 as ago'))).ago as number
  const age = () => app.knex('sessions').where('id', sid).update({ last_used_at: app.knex.raw('now() - interval \'5 minutes\'') })

  await age()
  t.equal(await profile(app, tokens.data), 200)
  // Written beside the request, which does not wait for it.
  t.ok(await within(2_000, async () => await lastUsed() < 5), 'written on the first use')
  await age()
  t.equal(await profile(app, tokens.data), 200)
  await new Promise(resolve => setTimeout(resolve, 300))
  t.ok(await lastUsed() >= 300, 'not again within the minute')
})

t.test('a user has at most SESSIONS_PER_USER live sessions: a login past it ends the oldest', async t => {
  const app = await build(t)
  const { id, email } = await userWithRoles(app, ['User'])
  // As if the user had logged in that many times already.
  await app.knex('sessions').insert(Array.from({ length: SESSIONS_PER_USER }, (_, i) => ({ user_id: id, expires_at: app.knex.raw('now() + interval \'1 day\''), user_agent: `old ${i}` })))
  const oldest = await app.knex('sessions').where('user_id', id).orderBy('id').first('id')
  const tokens = await logIn(app, email, 'newest')
  const live = (await app.inject({ url: '/api/sessions', headers: bearer(tokens.data) })).json().data as { id: number, user_agent: string }[]
  t.equal(live.length, SESSIONS_PER_USER)
  t.equal(live[0]!.user_agent, 'newest', 'the most recent first')
  t.notOk(live.some(session => session.id === oldest.id), 'the oldest has ended')
  t.equal((await app.knex('sessions').where('id', oldest.id).first('end_reason')).end_reason, 'superseded')
})

t.test('a login at the cap reads the user\'s sessions once, not once for each of them', async t => {
  const app = await build(t)
  const { id } = await userWithRoles(app, ['User'])
  await app.knex('sessions').insert(Array.from({ length: SESSIONS_PER_USER }, (_, i) => ({ user_id: id, expires_at: app.knex.raw('now() + interval \'1 day\''), user_agent: `old ${i}` })))
  // Another user's live sessions, which a login of this one has no reason to read.
  const other = await userWithRoles(app, ['User'])
  await app.knex('sessions').insert(Array.from({ length: 3 * SESSIONS_PER_USER }, () => ({ user_id: other.id, expires_at: app.knex.raw('now() + interval \'1 day\'') })))
  const { password } = await app.knex('users').where({ id }).first('password')
  // The session rows this transaction fetched through an index, as PostgreSQL counts them.
  await app.knex.transaction(async trx => {
    const started = await sessionsOf(app).start(trx, id, password, { userAgent: 'newest', ip: '127.0.0.1' })
    t.ok(started!.superseded.length > 0, 'the oldest ended')
    const { rows: [read] } = await trx.raw("select idx_tup_fetch::int as n from pg_stat_xact_user_tables where relname = 'sessions'")
    // Twice over the user's live sessions (to find those past the cap, to end them), and the
    // new one's foreign key; once for each of them, or over every user's, is far more.
    t.ok(read.n <= 3 * (SESSIONS_PER_USER + 2), `${read.n} session rows read for ${SESSIONS_PER_USER} live sessions of the user's`)
  })
})

// 15, not more: through `npm run test:pgbouncer`'s 20 server connections a database, the
// holder's transaction, each login's and the query that counts the waiters must all fit at once.
const LOGINS = 15
t.test(`${LOGINS} logins at once of a user at the cap: the cap holds as they all answer, and each gets a working token`, async t => {
  const app = await build(t, config => { config.auth.rateLimit.perEmail = 100; config.auth.rateLimit.perIp = 100; config.dbPoolMax = 25 })
  const { id, email } = await userWithRoles(app, ['User'])
  await app.knex('sessions').insert(Array.from({ length: SESSIONS_PER_USER }, (_, i) => ({ user_id: id, expires_at: app.knex.raw('now() + interval \'1 day\''), user_agent: `old ${i}` })))
  // The user's row held until every login's statement waits for it, its snapshot taken: each
  // must see the sessions of the logins before it all the same, or more than the cap stay live.
  const holder = await app.knex.transaction()
  t.teardown(() => holder.isCompleted() ? undefined : holder.rollback())
  await holder('users').where('id', id).forShare().select('id')
  const logins = Promise.all(Array.from({ length: LOGINS }, (_, i) => logIn(app, email, `login ${i}`)))
  t.ok(await lockWaiters(app, LOGINS, 60_000), 'all under way')
  await holder.commit()
  const tokens = await logins
  const live = await app.knex('sessions').where('user_id', id).whereNull('ended_at').count({ n: '*' })
  t.equal(Number(live[0]!.n), SESSIONS_PER_USER, 'at the cap, not past it, once they are all answered')
  t.same(await Promise.all(tokens.map(({ data }) => profile(app, data))), tokens.map(() => 200), 'every login\'s token works')
  const newest = await app.knex('sessions').where('user_id', id).whereNull('ended_at').orderBy('id', 'desc').limit(LOGINS).pluck('user_agent')
  t.same(newest.sort(), tokens.map((_, i) => `login ${i}`).sort(), 'the oldest ended, the new ones live')
})

t.test('a login whose user\'s password changes, or who is deleted, while its hash is checked: 401, and no session starts', async t => {
  const app = await build(t)
  const changes = { 'password changed': { password: 'a hash of another password' }, deleted: { deleted_at: app.knex.fn.now() } }
  for (const [what, change] of Object.entries(changes)) {
    const { id, email } = await userWithRoles(app, ['User'])
    const sessions = async () => Number((await app.knex('sessions').where('user_id', id).count({ n: '*' }))[0]!.n)
    const before = await sessions()
    // The change holds the user's row, uncommitted: the login reads the old password, matches
    // it, and waits for the row to start its session.
    const holder = await app.knex.transaction()
    t.teardown(() => holder.isCompleted() ? undefined : holder.rollback())
    await holder('users').where('id', id).update(change)
    const login = app.inject({ method: 'POST', url: '/api/login', payload: { email, password: PASSWORD } })
    t.ok(await lockWaiters(app, 1, 60_000), `${what}: the login waits for the user`)
    await holder.commit()
    const res = await login
    t.equal(res.statusCode, 401, what)
    t.equal(res.json().code, 'invalid_credentials')
    t.equal(await sessions(), before, `${what}: no session started`)
    t.ok(await app.knex('audit_log').where({ action: 'login-failed' }).whereRaw("(after->>'user_id')::int = ?", [id]).first(), `${what}: a failed login in the audit log`)
  }
})

t.test('the sweep deletes sessions ended or expired a day ago, and refresh tokens expired as long ago; nothing live', async t => {
  const app = await build(t)
  const { email } = await userWithRoles(app, ['User'])
  const [live, ended, expired, recent] = [await logIn(app, email), await logIn(app, email), await logIn(app, email), await logIn(app, email)]
  const sid = (tokens: Tokens) => claims(tokens.data).sid
  const spent: Tokens = (await refresh(app, live.refresh_token)).json()
  await app.knex('sessions').where('id', sid(ended)).update({ ended_at: app.knex.raw('now() - interval \'25 hours\'') })
  await app.knex('sessions').where('id', sid(expired)).update({ expires_at: app.knex.raw('now() - interval \'25 hours\'') })
  await app.knex('sessions').where('id', sid(recent)).update({ ended_at: app.knex.raw('now() - interval \'23 hours\'') })
  await app.knex('refresh_tokens').where('hash', createHash('sha256').update(live.refresh_token).digest()).update({ expires_at: app.knex.raw('now() - interval \'25 hours\'') })

  await sessionsOf(app).sweep(app.log)
  const left = (await app.knex('sessions').select('id')).map(row => Number(row.id))
  t.ok(left.includes(sid(live)) && left.includes(sid(recent)), 'a live session, and one ended less than a day ago, stay')
  t.notOk(left.includes(sid(ended)) || left.includes(sid(expired)), 'ended or expired a day ago: gone')
  t.equal(await app.knex('refresh_tokens').where('session_id', sid(ended)).first(), undefined, 'their refresh tokens with them')
  t.equal((await refresh(app, live.refresh_token)).statusCode, 401, 'the swept token is unknown')
  t.equal(await profile(app, spent.data), 200, 'and its session lives on')
  t.equal((await refresh(app, spent.refresh_token)).statusCode, 200)
})

t.test('last uses are remembered for as many sessions as the caller cache holds: one forgotten is written again', async t => {
  const app = await build(t, config => { config.auth.cacheSize = 1 })
  const { email } = await userWithRoles(app, ['User'])
  const [first, second] = [await logIn(app, email), await logIn(app, email)]
  const ago = async (tokens: Tokens) => (await app.knex('sessions').where('id', claims(tokens.data).sid)
    .first(app.knex.raw('extract(epoch from now() - last_used_at)::float8 as ago'))).ago as number
  const age = () => app.knex('sessions').update({ last_used_at: app.knex.raw('now() - interval \'5 minutes\'') })
  await age()
  t.equal(await profile(app, first.data), 200)
  t.ok(await within(2_000, async () => await ago(first) < 5))
  t.equal(await profile(app, second.data), 200, 'the second session pushes the first out')
  t.ok(await within(2_000, async () => await ago(second) < 5))
  await age()
  t.equal(await profile(app, first.data), 200)
  t.ok(await within(2_000, async () => await ago(first) < 5), 'the first, forgotten, is written again within the minute')
})

t.test('a session started with no User-Agent shows none', async t => {
  const app = await build(t)
  const { id } = await userWithRoles(app, ['User'])
  const { password } = (await app.knex('users').where('id', id).first('password'))!
  const started = await sessionsOf(app).start(app.knex, id, password, { userAgent: undefined, ip: '192.0.2.1' })
  t.same(await app.knex('sessions').where('id', started!.session.id).first('user_agent', 'ip'), { user_agent: null, ip: '192.0.2.1' })
})

t.test('a token of an earlier release, with no session, holds until logged out; a password change made with it keeps it', async t => {
  const app = await build(t)
  const { id } = await userWithRoles(app, ['Admin'])
  const legacy = () => app.jwt.sign({ sub: String(id), jti: randomUUID(), gen: 0 })
  const loggedOut = legacy()
  t.equal(await profile(app, loggedOut), 200)
  t.equal((await app.inject({ url: '/api/logout', headers: bearer(loggedOut) })).statusCode, 200)
  t.equal(await profile(app, loggedOut), 401, 'revoked by its logout')

  const [used, other] = [legacy(), legacy()]
  const password = { password: 'another good password', c_password: 'another good password' }
  t.equal((await app.inject({ method: 'PATCH', url: `/api/users/${id}`, headers: bearer(used), payload: { ...password, current_password: PASSWORD } })).statusCode, 200)
  t.equal(await profile(app, used), 200, 'the token the change was made with is kept')
  t.equal(await profile(app, other), 401, 'another of the same generation is not')
  t.equal((await app.inject({ url: '/api/logout?scope=all', headers: bearer(used) })).statusCode, 200)
  t.equal(await profile(app, used), 401, 'ending every session ends the kept token too')
})

t.test('a session\'s token holds by its session alone: no gen claim, and one with a gen (an earlier release\'s) is read by nothing', async t => {
  const app = await build(t)
  const { id, email } = await userWithRoles(app, ['User'])
  const tokens = await logIn(app, email)
  const { sid } = claims(tokens.data)
  t.notOk('gen' in claims(tokens.data), 'a login\'s token has no gen claim')
  const signed = (extra: object) => app.jwt.sign({ sub: String(id), jti: randomUUID(), ...extra })
  t.equal(await profile(app, signed({ sid })), 200, 'a session\'s token without gen is accepted')
  await app.knex('users').where({ id }).increment('token_generation', 3)
  const earlier = signed({ sid, gen: 0 })
  t.equal(await profile(app, earlier), 200, 'an earlier release\'s, with a gen the user has moved past, holds while its session does')
  t.equal(await profile(app, signed({ sid, gen: -1 })), 401, 'a gen not of the form the service signed is refused')
  t.equal(await profile(app, signed({})), 401, 'a token of no session needs its gen')
  t.equal((await app.inject({ url: '/api/logout', headers: bearer(tokens.data) })).statusCode, 200)
  t.equal(await profile(app, earlier), 401, 'the session ended: so did every token of it')
})
