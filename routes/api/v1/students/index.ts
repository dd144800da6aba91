import { studentRoutes } from '../../../students/student-routes.js'

/** Variant A: `/api/v1/students`, whose PUT changes the name only. */
export default studentRoutes({ namespace: 'v1.students', tag: { name: 'students (v1)', description: 'Variant A: the update changes the name only' }, order: 1, update: 'name-only', patch: false, bulk: false })
