// The pass-through's view of a request target: decoded and normalised before anything is decided, so
// no spelling of one of the gateway's own endpoints is forwarded and the provider reads the path that
// was judged.
import { describe, expect, it } from 'vitest';
import { forwardedPath, isManagedPath } from '../../src/upstream/forwarded-path.js';

describe('forwardedPath', () => {
  it.each([
    ['POST', '/v1/chat%2Fcompletions'],
    ['POST', '/v1/chat%2fcompletions'],
    ['POST', '/v1//chat/completions'],
    ['POST', '/v1/chat//completions'],
    ['POST', '/v1/./chat/completions'],
    ['POST', '/v1/chat/./completions'],
    ['POST', '/v1/Chat/Completions'],
    ['POST', '/v1/CHAT/COMPLETIONS'],
    ['POST', '/v1/%63hat/completions'],
    ['POST', '/v1/chat/completions/'],
    ['POST', 'http://attacker.example/v1/chat%2Fcompletions'],
    ['POST', '/v1//context/render'],
    ['GET', '/v1//sessions/abc'],
    ['DELETE', '/v1/Sessions/abc'],
    ['GET', '/v1/admin%2Fbudgets/credentials/x'],
    ['POST', '/v1//responses'],
    ['GET', '/v1/responses/resp_1/input_items'],
    ['POST', '/v1/responses/resp_1/cancel'],
  ])('%s %s is the gateway’s own: never forwarded', (method, target) => {
    expect(forwardedPath(method, target)).toEqual({ kind: 'managed' });
  });

  it.each([
    ['/v1/files/..%2F..%2Fsecret'],
    ['/v1/files/%2e%2e/secret'],
    ['/v1/files/%252e%252e/secret'],
    ['/v1/chat%252Fcompletions'],
    ['/v1/files/a%00b'],
    ['/v1/files/a%5Cb'],
    ['/v1/files/%E0%A4%A'],
    ['/v2/embeddings'],
    ['/v1/'],
  ])('%s is refused', (target) => {
    expect(forwardedPath('GET', target)).toEqual({ kind: 'invalid' });
  });

  it.each([
    ['POST', '/v1/embeddings', '/embeddings'],
    ['POST', '/v1//embeddings', '/embeddings'],
    ['POST', '/v1/./audio//speech', '/audio/speech'],
    ['GET', '/v1/files?purpose=batch&limit=2', '/files?purpose=batch&limit=2'],
    ['GET', '/v1/files/file%20with%20space', '/files/file%20with%20space'],
    ['GET', '/v1/chat/completions', '/chat/completions'],
    ['GET', '/v1/chat/completions/chatcmpl-1/messages', '/chat/completions/chatcmpl-1/messages'],
    ['GET', 'http://example.test/v1/models/gpt-4o', '/models/gpt-4o'],
  ])('%s %s is forwarded as %s', (method, target, path) => {
    const result = forwardedPath(method, target);
    expect(result.kind).toBe('forward');
    expect(result.kind === 'forward' ? result.path : undefined).toBe(path);
  });
});

describe('isManagedPath', () => {
  it('claims chat completions for POST only: the other methods are the provider’s stored completions', () => {
    expect(isManagedPath('POST', ['chat', 'completions'])).toBe(true);
    expect(isManagedPath('GET', ['chat', 'completions'])).toBe(false);
    expect(isManagedPath('POST', ['chat', 'completions', 'chatcmpl-1'])).toBe(false);
    expect(isManagedPath('POST', ['embeddings'])).toBe(false);
  });
});
