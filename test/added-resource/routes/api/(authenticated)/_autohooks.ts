// This tree mirrors routes/: the folder's hooks are the service's own (the token check).
export { default } from '../../../../../routes/api/(authenticated)/_autohooks.js'
