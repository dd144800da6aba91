import t from 'tap'
import { buildApp, createDatabase, testConfig } from '../../helper.js'
import { ada } from './fixtures.js'

t.test('records survive a restart of the app', async t => {
  const config = testConfig(await createDatabase(t))
  const first = await buildApp(t, config)
  const created = (await first.inject({ method: 'POST', url: '/students', payload: ada })).json()
  await first.close()

  const second = await buildApp(t, config)
  const res = await second.inject({ method: 'GET', url: `/api/v1/students/${created.id}` })
  t.equal(res.statusCode, 200)
  t.same(res.json(), created)
})

t.test('dob reads back as written whatever the time zones of the service and the database', async t => {
  const db = await createDatabase(t)
  const saved = process.env.TZ
  t.teardown(() => { process.env.TZ = saved })

  for (const zone of ['Pacific/Kiritimati', 'America/Adak', 'UTC']) {
    process.env.TZ = zone
    const app = await buildApp(t, testConfig(db))
    await app.knex.raw(`alter database ${db.database} set timezone to '${zone === 'UTC' ? 'Pacific/Pago_Pago' : zone}'`)
    const email = `${zone.replace('/', '.')}@example.com`
    const created = await app.inject({ method: 'POST', url: '/students', payload: { ...ada, email, dob: '2000-01-01' } })
    t.equal(created.json().dob, '2000-01-01', `created in ${zone}`)
    const shown = await app.inject({ method: 'GET', url: `/students/${created.json().id}` })
    t.equal(shown.json().dob, '2000-01-01', `read in ${zone}`)
    t.match(shown.json().created_at, /Z$/, 'timestamps in UTC')
    await app.close()
  }
})
