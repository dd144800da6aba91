import { studentRoutes } from './student-routes.js'

/** Variant B: `/students`, whose PUT and PATCH change any of the student's fields. */
export default studentRoutes({ namespace: 'students', tag: { name: 'students', description: 'Variant B: updates change any of the fields' }, order: 2, update: 'any-fields', patch: true, bulk: true })
