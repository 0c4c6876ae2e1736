// `pnpm bench:dispatcher`'s signing part: the dispatcher's Sender, loaded in its stead by
// signing-modes-preload.ts, that adds up the CPU each attempt takes before it first waits (the
// body, the signing, the request and its headers made and written), by the way of signing in force.
// The windows of the whole process's CPU per delivery are too noisy (a fifth from window to window)
// to see a difference of a few µs; this is where the ways differ, over thousands of attempts.
import {
  Sender as ProductionSender,
  type AttemptResult,
  type DeliveryRequest,
} from '../../services/dispatcher/src/sender.ts';
import { addSendCost } from './signing-modes.ts';

export * from '../../services/dispatcher/src/sender.ts';

export class Sender extends ProductionSender {
  override send(request: DeliveryRequest): Promise<AttemptResult> {
    const before = process.threadCpuUsage();
    const sending = super.send(request);
    const spent = process.threadCpuUsage(before);
    addSendCost(spent.user + spent.system);
    return sending;
  }
}
