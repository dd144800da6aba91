/** The two variants of the student interface, for tests that hold for both. */
export const variants = [
  { name: 'variant A', base: '/api/v1/students' },
  { name: 'variant B', base: '/students' }
] as const

export const ada = { name: 'Ada Lovelace', email: 'ada@example.com', age: 36, dob: '1815-12-10' }

/** A valid student whose e-mail address is made unique by `n`. */
export function student (n: number) {
  return { name: `Student ${n}`, email: `student${n}@example.com`, age: 20 + (n % 50), dob: '2000-01-31' }
}
