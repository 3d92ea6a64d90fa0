import { createServer } from 'node:net';

/** Asks the kernel for a free loopback port. Another process could take it before we bind it; callers retry. */
export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error('freePort: the kernel returned no TCP address'));
        return;
      }
      const { port } = address;
      server.close(() => resolve(port));
    });
  });
}
