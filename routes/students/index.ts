import { studentRoutes } from './student-routes.js'

/** Variant B: `/students`, whose PUT and PATCH change any of the student's fields. */
export default studentRoutes({ namespace: 'students', tag: 'students', update: 'any-fields', patch: true })
