import { Type } from '@sinclair/typebox'

/** Fields shared by registration and the users resource. */
export const userFields = {
  name: Type.String({ minLength: 1, maxLength: 255, example: 'Grace Hopper' }),
  email: Type.String({ format: 'email', maxLength: 254, description: 'Unique without regard to case', example: 'grace@example.com' }),
  password: Type.String({ minLength: 8, maxLength: 128, description: '8 to 128 characters, not trimmed', writeOnly: true }),
  c_password: Type.String({ maxLength: 128, description: 'The password again', writeOnly: true })
}
