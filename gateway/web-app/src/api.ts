import { sessionToken, signOut } from "./session.ts";

/** The app API refused: `data.error` (its statusCode and message), or an HTTP failure. */
class ApiError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** The operation does not exist on this server (an HTTP 404 for the path, not an operation's 404). */
export class NotOnThisServer extends Error {}

/** The session is missing or was refused: the page goes back to signing in. */
export class SignedOut extends Error {}

/** Calls an operation below `/v1` with the ID token as bearer; answers `data.data`. */
export async function api<T = Record<string, unknown>>(
  method: "GET" | "POST" | "DELETE",
  path: string,
  body?: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<T> {
  const token = sessionToken();
  if (!token) throw new SignedOut();
  const response = await fetch(`/v1${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    ...(signal ? { signal } : {}),
  });
  const answer = (await response.json().catch(() => undefined)) as
    | { data?: { data?: T; error?: { statusCode: number; message: string } }; message?: string; error?: string }
    | undefined;
  if (response.status === 404 && answer?.error === "not_found") throw new NotOnThisServer(path);
  const refusal = answer?.data?.error;
  if (refusal?.statusCode === 401) {
    signOut();
    throw new SignedOut();
  }
  if (refusal) throw new ApiError(refusal.statusCode, refusal.message);
  if (!response.ok || answer?.data?.data === undefined)
    throw new ApiError(response.status, answer?.message ?? `HTTP ${response.status}`);
  return answer.data.data;
}
