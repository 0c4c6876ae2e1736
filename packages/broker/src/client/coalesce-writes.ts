import type { Socket } from 'node:net';

/**
 * Makes everything written to `socket` within one tick of the event loop go out as one write.
 *
 * amqplib writes each frame set (a publish, an ack) to its socket on its own, and on a socket that
 * can take them each write is a system call: a publisher confirming a chunk of twenty events made
 * twenty, and on loopback each one also runs RabbitMQ's side of the delivery in the caller's time.
 * Corked on the first write of a tick and uncorked on the next
 * tick, the socket hands the tick's frames to the kernel together (one writev), in the order they
 * were written; nothing waits longer than the tick it was written in.
 *
 * It leans on amqplib writing to the socket through `write` alone, which test/coalesce-writes.test.ts
 * holds it to.
 */
export function coalesceWrites(socket: Socket): void {
  const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
  let corked = false;
  const uncork = () => {
    corked = false;
    socket.uncork();
  };
  (socket as unknown as { write: typeof write }).write = (...args: unknown[]) => {
    if (!corked) {
      corked = true;
      socket.cork();
      process.nextTick(uncork);
    }
    return write(...args);
  };
}
