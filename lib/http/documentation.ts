/** The service's name, as the OpenAPI document, its page and `GET /` give it. */
export const TITLE = 'Student records API'
/** The documentation page's address; the OpenAPI document is at its `/json` and `/yaml`. */
export const DOCUMENTATION_PATH = '/documentation'
