/**
 * The dashboard's own small request/answer pair, so that routing, scoping,
 * CSRF and errors (core.ts) are written once and every transport only
 * translates: Node's (req, res) in create-dashboard.ts, the Fetch API's
 * Request/Response in fetch-handler.ts. A transport builds a
 * DashboardRequest from its native request and writes the DashboardAnswer
 * back; it decides nothing itself, which is what keeps the two identical.
 */
import type { LiveWriter } from './live.js';

export interface DashboardRequest {
  /** Upper-case HTTP method. */
  readonly method: string;
  /** The public path and query as the client sent them (before any framework stripped a mount prefix). */
  readonly target: string;
  /** One header by lower-case name; repeated headers joined with ', '. */
  header(name: string): string | undefined;
  /** The client reached us over TLS (the `Secure` cookie attribute follows it, or `x-forwarded-proto: https`). */
  readonly secure: boolean;
  /** The body's bytes, read once, as they arrive (the size limit is enforced while reading). */
  body(): AsyncIterable<Uint8Array>;
}

/** A complete answer. For HEAD the core leaves `body` null and keeps the headers (content-length included). */
export interface BodyAnswer {
  readonly kind: 'body';
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | Uint8Array | null;
}

/** The live stream: the transport hands `open` a writer, which gets its status and headers at once, then events until either side ends it. */
export interface StreamAnswer {
  readonly kind: 'stream';
  open(writer: LiveWriter): void;
}

export type DashboardAnswer = BodyAnswer | StreamAnswer;
