import { Type, type Static } from '@sinclair/typebox'
import { listQuerySchema, type ListFields } from '../../../../../../lib/http/list-query.js'
import { AtLeastOneOf, Created, CreateHeaders, Envelope, errorResponses, IdParams, ListResponse, NotModified, ReadHeaders, Tagged, Timestamp, WriteHeaders } from '../../../../../../schemas/common.js'

export const noteFields = {
  title: Type.String({ minLength: 1, maxLength: 200, example: 'Call Acme' }),
  pinned: Type.Boolean({ description: 'Shown first', example: false })
}

export const NoteInput = Type.Object(noteFields, { $id: 'NoteInput', additionalProperties: false })
export type NoteInput = Static<typeof NoteInput>

export const Note = Type.Object({
  id: Type.Integer({ minimum: 1 }),
  ...noteFields,
  created_at: Timestamp,
  updated_at: Timestamp
}, { $id: 'Note', additionalProperties: false })
export type Note = Static<typeof Note>

/** What lists of notes filter and sort on. */
export const noteListFields: ListFields = {
  id: { type: 'integer', column: 'id', sortable: true },
  title: { type: 'text', column: 'title', sortable: true },
  pinned: { type: 'boolean', column: 'pinned', sortable: true },
  created_at: { type: 'timestamp', column: 'created_at', sortable: true, description: 'creation time' }
}

/** The OpenAPI tag of every note operation. */
export const notesTag = { name: 'notes', description: 'Notes, behind the note-* permissions' }
const auth = { tags: [notesTag.name], security: [{ bearerAuth: [] }] }
const NoteEnvelope = (description: string) => Envelope(Type.Ref(Note), { description })

export const noteSchemas = {
  index: {
    ...auth,
    operationId: 'notes.index',
    summary: 'List notes',
    description: 'Filtered and sorted as asked, `limit` at a time; needs note-list.',
    querystring: listQuerySchema(noteListFields),
    response: { 200: ListResponse(Envelope(Type.Array(Type.Ref(Note))), 'One page of notes'), ...errorResponses(400, 401, 403) }
  },
  show: {
    ...auth,
    operationId: 'notes.show',
    summary: 'Get one note',
    description: 'Needs note-list.',
    params: IdParams,
    headers: ReadHeaders,
    response: { 200: Tagged(NoteEnvelope('The note'), 'The note'), 304: NotModified, ...errorResponses(400, 401, 403, 404) }
  },
  store: {
    ...auth,
    operationId: 'notes.store',
    summary: 'Create a note',
    description: 'Needs note-create.',
    headers: CreateHeaders,
    body: Type.Ref(NoteInput),
    response: { 201: Created(NoteEnvelope('The new note'), 'The new note; `Location` is its address'), ...errorResponses(400, 401, 403, 409, 413, 415, 422) }
  },
  patch: {
    ...auth,
    operationId: 'notes.patch',
    summary: 'Change some fields of a note',
    description: 'Takes at least one field; needs note-edit.',
    params: IdParams,
    headers: WriteHeaders,
    body: AtLeastOneOf(Type.Object(noteFields)),
    response: { 200: Tagged(NoteEnvelope('The note as changed'), 'The note as changed'), ...errorResponses(400, 401, 403, 404, 412, 413, 415, 428) }
  },
  destroy: {
    ...auth,
    operationId: 'notes.destroy',
    summary: 'Delete a note',
    description: 'Needs note-delete.',
    params: IdParams,
    headers: WriteHeaders,
    response: { 200: NoteEnvelope('The deleted note'), ...errorResponses(400, 401, 403, 404, 412, 428) }
  }
}

export const noteSharedSchemas = [NoteInput, Note]
