import t from 'tap'
import { build } from '../helper.js'
import { CodedError } from '../../lib/http/error-codes.js'
import { cursorSecret } from '../../lib/http/cursor.js'
import { listRequest, sortValues, type ListQuery } from '../../lib/http/list-query.js'
import { studentsRepository } from '../../routes/students/repository.js'
import { studentListFields } from '../../routes/students/schema.js'

const ROWS = 1_000_000

interface PlanNode { 'Node Type': string, 'Relation Name'?: string, Plans?: PlanNode[] }

/** Every node of a plan, depth first. */
const nodes = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodes)]

t.test(`at ${ROWS.toLocaleString('en')} students, no documented sort and no contains reads the whole table`, async t => {
  const app = await build(t)
  // More than the service's statement time limit allows a statement. Unlogged, in this test's
  // own database: the plans are the same, and the machine, shared with other test files, is
  // spared writing a million rows' WAL.
  await app.knex.raw('alter table students set unlogged')
  await app.knex.transaction(async trx => {
    await trx.raw('set local statement_timeout = 0')
    // The indexes built after the rows, as a bulk load would: far quicker than a million rows'
    // entries one by one. A constraint's index stays (it would go with the constraint).
    const { rows: indexes } = await trx.raw<{ rows: { name: string, definition: string }[] }>(`
      select i.indexrelid::regclass::text as name, pg_get_indexdef(i.indexrelid) as definition
      from pg_index i
      where i.indrelid = 'students'::regclass and not exists (select from pg_constraint c where c.conindid = i.indexrelid)`)
    for (const { name } of indexes) await trx.raw(`drop index ${name}`)
    await trx.raw(`
    insert into students (name, email, age, dob, created_at)
    select 'Student ' || i, 's' || i || '@example.com', i % 100, date '1950-01-01' + (i % 20000),
           timestamptz '2026-01-01' + i * interval '1 second'
    from generate_series(1, ${ROWS}) i`)
    for (const { definition } of indexes) await trx.raw(definition)
  })
  await app.knex.raw('analyze students')
  const students = studentsRepository(app.database, message => new CodedError('email_taken', message))

  async function plan (query: ListQuery): Promise<PlanNode[]> {
    const request = listRequest('/students', studentListFields, { limit: 100, ...query }, cursorSecret('a secret'))
    const { sql, bindings } = students.pageSql(request)
    const { rows } = await app.database.pool.query({ text: `explain (format json) ${sql}`, values: bindings as unknown[] })
    return nodes(rows[0]['QUERY PLAN'][0].Plan)
  }
  const sequential = (found: PlanNode[]) => found.some(node => node['Node Type'] === 'Seq Scan' && node['Relation Name'] === 'students')

  for (const sort of sortValues(studentListFields)) {
    t.notOk(sequential(await plan({ sort: [sort] })), `sort=${sort}: the first page`)
  }
  for (const [sort, values] of [[['-dob'], ['1980-06-01']], [['-dob', 'name'], ['1980-06-01', 'Student 5']]] as const) {
    const deep = listRequest('/students', studentListFields, { sort: [...sort], limit: 100 }, cursorSecret('a secret'))
    deep.after = { values: [...values], id: 500_000 }
    const { sql, bindings } = students.pageSql(deep)
    const { rows } = await app.database.pool.query({ text: `explain (format json) ${sql}`, values: bindings as unknown[] })
    const found = nodes(rows[0]['QUERY PLAN'][0].Plan)
    t.notOk(sequential(found), `sort=${sort.join(',')}: a page deep in the list`)
    t.ok(found.some(node => /Index/.test(node['Node Type']) && JSON.stringify(node).includes('dob')), `sort=${sort.join(',')}: starts from the cursor in the index on dob`)
  }
  t.notOk(sequential(await plan({ name: { contains: 'nt 12345' } })), 'name[contains]')
  t.notOk(sequential(await plan({ age: { gte: 20 }, sort: ['-dob'] })), 'age[gte] with sort=-dob')
})
