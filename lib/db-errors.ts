/** Whether the error is PostgreSQL's unique_violation, on the given index when one is named. */
export function isUniqueViolation (error: unknown, index?: string): boolean {
  const { code, constraint } = error as { code?: string, constraint?: string }
  return code === '23505' && (index === undefined || constraint === index)
}
