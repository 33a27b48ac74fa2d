/**
 * A TCP proxy between a client and PostgreSQL that a test can cut and
 * restore: the network outage a real deployment sees (server restart,
 * failover, a dropped link), reproduced without touching the server the other
 * test files share. While cut it refuses new connections (ECONNREFUSED, the
 * port is closed) and has destroyed every open one (the client sees
 * "Connection terminated unexpectedly" or ECONNRESET mid-query).
 * `swallowResponses()` lets requests through but drops what the server
 * answers: a statement commits and its client never hears (a lost response).
 * `freeze()` drops everything both ways and closes nothing: a network that
 * silently stopped (a NAT timeout, a partition), which only a timeout notices.
 */
import net from 'node:net';

export interface FaultProxy {
  /** `targetUrl` with its host and port replaced by the proxy's. */
  readonly url: string;
  readonly port: number;
  /** Connections accepted so far (a reconnect shows up as a new one). */
  readonly accepted: number;
  readonly isCut: boolean;
  /** From now until `cut()`, requests reach PostgreSQL but its answers are dropped. */
  swallowResponses(): void;
  /** From now until `restore()`, nothing is forwarded either way and nothing is closed. */
  freeze(): void;
  /** Destroys every open connection and closes the port until `restore()`. */
  cut(): Promise<void>;
  /** Opens the port again (same number): new connections reach PostgreSQL. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startFaultProxy(targetUrl: string): Promise<FaultProxy> {
  const target = new URL(targetUrl);
  const targetHost = target.hostname;
  const targetPort = Number(target.port || 5432);
  const sockets = new Set<net.Socket>();
  let accepted = 0;
  let cut = false;
  let swallow = false;
  let frozen = false;

  const server = net.createServer((client) => {
    accepted += 1;
    const upstream = net.connect(targetPort, targetHost);
    sockets.add(client);
    sockets.add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.on('data', (chunk) => {
      if (!frozen) upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (!swallow && !frozen) client.write(chunk);
    });
  });

  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen(0);
  const port = (server.address() as net.AddressInfo).port;
  const url = new URL(targetUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);

  const closePort = () => new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve()));
  const destroyAll = () => {
    for (const socket of sockets) socket.destroy();
    sockets.clear();
  };

  return {
    url: url.toString(),
    port,
    get accepted() {
      return accepted;
    },
    get isCut() {
      return cut;
    },
    swallowResponses() {
      swallow = true;
    },
    freeze() {
      frozen = true;
    },
    async cut() {
      cut = true;
      swallow = false;
      const closed = closePort();
      destroyAll();
      await closed;
    },
    async restore() {
      frozen = false;
      if (!cut) return;
      await listen(port);
      cut = false;
    },
    async close() {
      cut = true;
      const closed = closePort();
      destroyAll();
      await closed;
    },
  };
}
