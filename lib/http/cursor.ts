import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto'
import { InvalidFields } from './invalid-fields.js'

/**
 * A list's cursor: the last row's sort values and id, with a signature over them, the list
 * and its filters and sort, so that a cursor holds for the list, filters and sort it was made
 * for, and for nothing altered. Opaque to clients; `v1` names its form.
 */
const FORM = 'v1'

/** What a cursor is made for: the list, its filters and its sort (list-query.ts's ListRequest holds them). */
export interface CursorScope {
  scope: string
  filters: readonly { field: string, operator: string, value: unknown }[]
  sort: readonly { field: string, descending: boolean }[]
}

/** Where a page begins: the sort values (bar id) of the previous page's last row, as PostgreSQL wrote them, and its id. */
export interface PageStart {
  values: string[]
  id: number
}

/** The signature's 16 bytes in base64url. */
const SIGNATURE_LENGTH = 22

/**
 * The key cursors are signed with, derived from JWT_SECRET: every instance of a deployment
 * accepts the others'. A key object, made once, spares each signature the key's setup.
 */
export function cursorSecret (jwtSecret: string): KeyObject {
  return createSecretKey(createHmac('sha256', jwtSecret).update('list cursors').digest())
}

function signature ({ scope, filters, sort }: CursorScope, payload: string, secret: KeyObject): Buffer {
  const identity = JSON.stringify([FORM, scope, filters.map(({ field, operator, value }) => [field, operator, value]), sort.map(({ field, descending }) => [field, descending])])
  return createHmac('sha256', secret).update(identity).update('\n').update(payload).digest().subarray(0, 16)
}

/** The cursor of the page after a row whose sort values (bar id) and id these are. */
export function makeCursor (request: CursorScope, values: string[], id: number, secret: KeyObject): string {
  const payload = JSON.stringify([values, id])
  return Buffer.from(payload).toString('base64url') + signature(request, payload, secret).toString('base64url')
}

/** Where a cursor says the page begins; 400 for one altered or made for another list, filters or sort. */
export function openCursor (cursor: string, request: CursorScope, secret: KeyObject): PageStart {
  const encoded = cursor.slice(0, -SIGNATURE_LENGTH)
  const payload = Buffer.from(encoded, 'base64url').toString()
  // Compared as written, not as decoded: base64url's last character has bits that decoding
  // ignores, and a cursor that differs there is altered too.
  const given = Buffer.from(cursor.slice(-SIGNATURE_LENGTH))
  const expected = Buffer.from(signature(request, payload, secret).toString('base64url'))
  const canonical = Buffer.from(payload).toString('base64url') === encoded
  if (cursor.length <= SIGNATURE_LENGTH || !canonical || given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new InvalidFields({ cursor: ['is not a cursor of this list with these filters and sort: follow the Link header'] }, 'query string')
  }
  // Signed by this service for this very list, filters and sort: its form is the one makeCursor wrote.
  const [values, id] = JSON.parse(payload) as [string[], number]
  return { values, id }
}
