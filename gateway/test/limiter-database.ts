import { openDatabase, openStatementPool } from "@svc/platform";
import { createTestDatabase } from "../../test/harness/index.ts";
import { entities } from "../src/credentials/entities.ts";
import { migrations } from "../src/migrations/index.ts";
import { decideRateLimits } from "../src/rate-limits/rate-limiter.ts";
import { memoryLogger } from "./memory-logger.ts";

/**
 * A database of its own with the gateway's schema migrated and the limiter's stored functions, and `count`
 * statement pools on it (two stand for two gateway replicas).
 */
export async function openLimiterDatabase(label: string, count = 1) {
  const database = await createTestDatabase(label);
  const orm = await openDatabase({
    url: database.url,
    schema: "gateway",
    entities,
    migrations,
    storedDefinitions: [decideRateLimits],
    logger: memoryLogger(),
  });
  const pools = Array.from({ length: count }, () =>
    openStatementPool({ url: database.url, schema: "gateway", max: 4, logger: memoryLogger() }),
  );
  return {
    url: database.url,
    pools,
    async close() {
      for (const pool of pools) await pool.end();
      await orm.close();
      await database.drop();
    },
  };
}
