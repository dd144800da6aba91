import { studentRoutes } from '../../../students/student-routes.js'

/** Variant A: `/api/v1/students`, whose PUT changes the name only. */
export default studentRoutes({ namespace: 'v1.students', tag: 'students (v1)', update: 'name-only', patch: false })
