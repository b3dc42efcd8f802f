// A session's turn or view, for tests whose requests continue their session's conversation: undefined
// (another conversation under the id, served without the session) fails the test there.
export async function inSession<T>(opened: Promise<T | undefined>): Promise<T> {
  const value = await opened;
  if (value === undefined) throw new Error('the request was taken for another conversation');
  return value;
}
