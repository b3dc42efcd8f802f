// A stored response as the Responses service hands it to a store that writes JSON: its messages and
// input items written by plain JSON.stringify, each of `shared` held once (response-store.ts heldOnce).
import { heldOnce, type SharedString, type StoredResponse } from '../../src/store/response-store.js';

export function withHeldOnce(record: StoredResponse, shared: readonly SharedString[]): StoredResponse {
  const held = heldOnce(record, shared);
  const writer = (values: readonly unknown[]) => (before: string, after: string) =>
    Buffer.from(`${before}${JSON.stringify(values)}${after}`);
  return {
    ...record,
    json: {
      messages: writer(record.messages),
      inputItems: writer(held.inputItems),
      response: held.response,
      shared,
    },
  };
}
