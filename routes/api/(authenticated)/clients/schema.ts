import { Type, type Static } from '@sinclair/typebox'
import { listQuerySchema, type ListFields } from '../../../../lib/http/list-query.js'
import { AtLeastOneOf, BatchBody, BulkAnswer, BatchQuery, BatchRowOutcome, Created, CreateHeaders, Envelope, Exportable, errorResponses, IdParams, ImportBody, ImportResult, ListResponse, NotModified, ReadHeaders, Tagged, Timestamp, WriteHeaders, TOKEN_OR_KEY } from '../../../../schemas/common.js'

export const clientFields = {
  name: Type.String({ minLength: 1, maxLength: 255, example: 'Acme Sp. z o.o.' }),
  vat_number: Type.String({ pattern: '^[0-9]{10}$', description: '10 digits', example: '5252248481' }),
  street: Type.String({ minLength: 1, maxLength: 255, example: 'ul. Prosta 1' }),
  city: Type.String({ minLength: 1, maxLength: 255, example: 'Warszawa' }),
  post_code: Type.String({ pattern: '^[0-9]{2}-[0-9]{3}$', description: '`NN-NNN`', example: '00-850' }),
  email: Type.String({ format: 'email', maxLength: 254, example: 'office@acme.example' })
}

export const ClientInput = Type.Object(clientFields, { $id: 'ClientInput', additionalProperties: false })
export type ClientInput = Static<typeof ClientInput>

export const Client = Type.Object({
  id: Type.Integer({ minimum: 1 }),
  ...clientFields,
  created_at: Timestamp,
  updated_at: Timestamp
}, { $id: 'Client', additionalProperties: false })
export type Client = Static<typeof Client>

/** What lists of clients filter and sort on. */
export const clientListFields: ListFields = {
  id: { type: 'integer', column: 'id', sortable: true },
  name: { type: 'text', column: 'name', sortable: true },
  vat_number: { type: 'text', column: 'vat_number', description: 'VAT number' },
  street: { type: 'text', column: 'street' },
  city: { type: 'text', column: 'city', sortable: true },
  post_code: { type: 'text', column: 'post_code' },
  email: { type: 'text', column: 'email' },
  created_at: { type: 'timestamp', column: 'created_at', sortable: true, description: 'creation time' },
  updated_at: { type: 'timestamp', column: 'updated_at', description: 'last update\'s time' }
}

const ClientEnvelope = Envelope(Type.Ref(Client))
/** The OpenAPI tag of every client operation. */
export const clientsTag = { name: 'clients', description: 'Clients, behind the client-* permissions' }
const auth = { tags: [clientsTag.name], security: TOKEN_OR_KEY }

export const clientSchemas = {
  index: {
    ...auth,
    operationId: 'clients.index',
    summary: 'List clients',
    description: 'Filtered and sorted as asked (by default all, in id order), `limit` at a time (default 100, at most 1000); needs client-list. With `Accept: text/csv` or `application/x-ndjson`, every client the filters and sort match, streamed (no envelope).',
    querystring: listQuerySchema(clientListFields),
    headers: ReadHeaders,
    response: { 200: Exportable(ListResponse(Envelope(Type.Array(Type.Ref(Client))), 'One page of clients')), 304: NotModified, ...errorResponses(400, 401, 403) }
  },
  show: {
    ...auth,
    operationId: 'clients.show',
    summary: 'Get one client',
    description: 'Needs client-list.',
    params: IdParams,
    headers: ReadHeaders,
    response: { 200: Tagged(ClientEnvelope, 'The client'), 304: NotModified, ...errorResponses(400, 401, 403, 404) }
  },
  store: {
    ...auth,
    operationId: 'clients.store',
    summary: 'Create a client',
    description: 'Needs client-create.',
    headers: CreateHeaders,
    body: Type.Ref(ClientInput),
    response: { 201: Created(ClientEnvelope, 'The new client; `Location` is its address'), ...errorResponses(400, 401, 403, 409, 413, 415, 422) }
  },
  batch: {
    ...auth,
    operationId: 'clients.batch',
    summary: 'Create clients in a batch',
    description: 'Needs client-create. Up to 1,000 clients in one request, each made as `POST` of one would make it (its audit entry and change event included), in one statement, all or nothing by itself (with an `Idempotency-Key`, in the transaction that keeps the key). Answers 200 with each row\'s outcome in the rows\' order in `data`: 201 with its id and ETag, or the status and error a single create would have answered. `mode=atomic` (the default) writes every row or none: a row refused makes the answer 422 `invalid_rows`, whose `data` names each refused row by index (`3.email`). One `Idempotency-Key` covers the batch: a retry gets the same answer, and no second copy of any row.',
    querystring: BatchQuery,
    headers: CreateHeaders,
    body: BatchBody(ClientInput),
    response: { 200: BulkAnswer(Envelope(Type.Array(Type.Ref(BatchRowOutcome))), 'Each row\'s outcome, in the rows\' order'), ...errorResponses(400, 401, 403, 409, 413, 415, 422) }
  },
  import: {
    ...auth,
    operationId: 'clients.import',
    summary: 'Import clients from a file',
    description: 'Needs client-create. Clients from a CSV or NDJSON file, streamed: each row checked as `POST` of one would check it, then all written in one transaction, each with its audit entry and change event. Clients have no unique field, so no row conflicts with a record; a row refused (unreadable or invalid) writes nothing: 422 `invalid_rows`, whose `data` names the first 100 by line (`3.email`). Answers 200 with the counts in `data`. One `Idempotency-Key` covers the file: a retry, even after a dropped connection, gets the first answer and writes nothing again. The time limit is `IMPORT_TIMEOUT` (10 minutes unless configured); a file too large for it is split, and each part imported with a key of its own.',
    headers: CreateHeaders,
    body: ImportBody(ClientInput, Object.keys(clientFields)),
    response: { 200: BulkAnswer(Envelope(Type.Ref(ImportResult)), 'What the import did'), ...errorResponses(400, 401, 403, 409, 413, 415, 422) }
  },
  update: (method: 'PUT' | 'PATCH') => ({
    ...auth,
    operationId: method === 'PUT' ? 'clients.update' : 'clients.patch',
    summary: method === 'PUT' ? 'Replace a client' : 'Change some fields of a client',
    description: method === 'PUT' ? 'Takes every field; needs client-edit.' : 'Takes at least one field; the others keep their values. Needs client-edit.',
    params: IdParams,
    headers: WriteHeaders,
    body: method === 'PUT' ? Type.Ref(ClientInput) : AtLeastOneOf(Type.Object(clientFields)),
    response: { 200: Tagged(ClientEnvelope, 'The client as changed'), ...errorResponses(400, 401, 403, 404, 412, 413, 415, 428) }
  }),
  destroy: {
    ...auth,
    operationId: 'clients.destroy',
    summary: 'Delete a client',
    description: 'Soft delete: the client is kept, invisible to the API.',
    params: IdParams,
    headers: WriteHeaders,
    response: { 200: Envelope(Type.Ref(Client), { description: 'The deleted client' }), ...errorResponses(400, 401, 403, 404, 412, 428) }
  }
}

export const clientSharedSchemas = [ClientInput, Client]
