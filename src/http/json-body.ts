// Request-body parsing: JSON with prototype-poisoning protection and a nesting limit, so a hostile
// body is a clear 400 and never a crash, a polluted prototype or a blown stack.
import secureJson from 'secure-json-parse';
import { GatewayError } from '../errors.js';

export const maxJsonDepth = 64;

/** True when any object or array in the value is nested deeper than `limit` levels. */
export function exceedsDepth(value: unknown, limit: number): boolean {
  const stack: Array<{ node: unknown; depth: number }> = [{ node: value, depth: 1 }];
  // Iterative walk: a recursive one would itself overflow on the inputs it is meant to reject.
  while (stack.length > 0) {
    const { node, depth } = stack.pop() as { node: unknown; depth: number };
    if (typeof node !== 'object' || node === null) continue;
    if (depth > limit) return true;
    if (Array.isArray(node)) {
      for (const child of node)
        if (typeof child === 'object' && child !== null) stack.push({ node: child, depth: depth + 1 });
    } else {
      for (const key in node) {
        const child = (node as Record<string, unknown>)[key];
        if (typeof child === 'object' && child !== null) stack.push({ node: child, depth: depth + 1 });
      }
    }
  }
  return false;
}

export function parseJsonBody(text: string): unknown {
  if (text.trim() === '')
    throw new GatewayError('invalid_json', 'The request body is empty; expected a JSON object.');
  let value: unknown;
  try {
    // secure-json-parse scans the whole text twice after parsing; a text that cannot hold either key
    // (not even \u-escaped) needs no scan: that halves the cost of a large body.
    const suspect = text.includes('__proto__') || text.includes('constructor') || text.includes('\\u00');
    value = suspect
      ? secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' })
      : JSON.parse(text);
  } catch (error) {
    const poisoned =
      error instanceof SyntaxError &&
      /prototype|constructor/i.test(error.message) &&
      !/JSON/.test(error.message);
    throw new GatewayError(
      'invalid_json',
      poisoned
        ? 'The request body contains a forbidden "__proto__" or "constructor.prototype" key.'
        : 'We could not parse the JSON body of your request. The body must be valid JSON.',
    );
  }
  if (exceedsDepth(value, maxJsonDepth)) {
    throw new GatewayError('json_too_deep', `The JSON body is nested deeper than ${maxJsonDepth} levels.`);
  }
  return value;
}
