import type { Route } from "../http/route.ts";
import { verifyTokenRoute } from "./verify-token.ts";

/** Every public operation under `{base_url}`, one file each in this folder. */
export const routes: readonly Route[] = [verifyTokenRoute];
