/**
 * Whether a body may be left out: its schema is an object none of whose fields is required,
 * and not "at least one of them" (as a DELETE's that takes the password or the session's word
 * for it). Such a body left out is `{}` (plugins/app/json-body.ts), and the OpenAPI document
 * says it is not required (plugins/app/swagger.ts).
 */
export function bodyOptional (schema: unknown): boolean {
  const object = schema as { type?: unknown, required?: unknown[], minProperties?: number } | undefined
  return object?.type === 'object' && (object.required ?? []).length === 0 && (object.minProperties ?? 0) === 0
}
