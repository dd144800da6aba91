/** Whether the error is PostgreSQL's unique_violation on the given index. */
function isUniqueViolation (error: unknown, index: string): boolean {
  const { code, constraint } = error as { code?: string, constraint?: string }
  return code === '23505' && constraint === index
}

/** The 409 of `conflict()` for a write that hit the unique index; any other error unchanged. */
export function uniqueConflict (error: unknown, index: string, conflict: () => Error): unknown {
  return isUniqueViolation(error, index) ? conflict() : error
}
