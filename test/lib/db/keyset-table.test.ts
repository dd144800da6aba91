import t from 'tap'
import knex from 'knex'
import pg from 'pg'
import { Type } from '@sinclair/typebox'
import { keysetTable } from '../../../lib/db/keyset-table.js'

// Nothing here reaches a database: the checks run as the table is made, at start-up.
const database = { knex: knex({ client: 'pg' }), pool: new pg.Pool() }
t.teardown(() => database.knex.destroy())
const table = (fields: Parameters<typeof keysetTable>[1]['fields']) => () => keysetTable(database, {
  name: 'things', rows: k => k('things'), columns: ['id', 'name'], schema: Type.Object({ id: Type.Integer(), name: Type.String() }), fields
})

t.test('a list field without a column needs a filter of its own', async t => {
  t.throws(table({ tag: { type: 'text' } }), /The list field tag of things has neither a column nor a filter of its own/)
})

t.test('a sortable field must be a column the list selects under its name', async t => {
  t.throws(table({ title: { type: 'text', column: 'name', sortable: true } }), /The sortable list field title of things is not a column the list selects/)
  t.doesNotThrow(table({ name: { type: 'text', column: 'things.name', sortable: true } }), 'by its last part')
})
