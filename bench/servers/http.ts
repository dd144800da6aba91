// What the bare servers (the ceilings) share: reading a JSON body and sending a JSON answer.
import type http from 'node:http'

export async function readJson (req: http.IncomingMessage) {
  let body = ''
  for await (const chunk of req) body += chunk
  return JSON.parse(body)
}

export function send (res: http.ServerResponse, status: number, body: unknown) {
  const json = JSON.stringify(body)
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(json) })
  res.end(json)
}
