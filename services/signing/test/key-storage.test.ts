import { createPrivateKey } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ConfigError, ManualClock } from "@svc/platform";
import { SignAttestationRequestSchema } from "@svc/proto/signing/v1/signing_pb.js";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../../test/harness/index.ts";
import { developmentKek, kekId, openPrivateKey } from "../src/key-encryption.ts";
import { checkToken, startTestSigning, testKek } from "./service-support.ts";
import { memoryLogger } from "./support.ts";

const request = (clock: ManualClock) =>
  create(SignAttestationRequestSchema, {
    requestId: "req_store",
    verified: true,
    organizationId: "org_s",
    verifiedAt: timestampFromDate(clock.now()),
  });

interface Needle {
  name: string;
  bytes: Buffer;
}

/** Every way a secret's bytes could sit in a column: raw, or as text in hex, base64 or base64url. */
function encodings(needle: Needle): { name: string; binary?: Buffer; text?: string }[] {
  return [
    { name: `${needle.name} (binary)`, binary: needle.bytes },
    { name: `${needle.name} (hex)`, text: needle.bytes.toString("hex") },
    { name: `${needle.name} (base64)`, text: needle.bytes.toString("base64").replace(/=+$/, "") },
    { name: `${needle.name} (base64url)`, text: needle.bytes.toString("base64url") },
  ];
}

/** Names of the needles found in any value of any row; whitespace is ignored so PEM line breaks hide nothing. */
function findSecrets(rows: Record<string, unknown>[], needles: Needle[]): string[] {
  const found = new Set<string>();
  for (const row of rows) {
    for (const value of Object.values(row)) {
      const binary = Buffer.isBuffer(value) ? value : Buffer.from(String(value));
      const texts = [binary.toString("latin1"), String(value)].map((text) => text.replace(/\s+/g, ""));
      for (const needle of needles) {
        for (const form of encodings(needle)) {
          const hit = form.binary
            ? binary.includes(form.binary)
            : texts.some((text) => text.toLowerCase().includes(form.text!.toLowerCase()) || text.includes(form.text!));
          if (hit) found.add(form.name);
        }
      }
    }
  }
  return [...found];
}

describe("keys at rest", () => {
  let db: TestDatabase;
  const kek = testKek();
  const clock = new ManualClock("2026-12-01T00:00:00Z");

  beforeAll(async () => {
    db = await createTestDatabase("signing_storage");
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("survive a restart: the same key signs again after the service reopens it under the same KEK", async () => {
    const first = await startTestSigning(db.url, { clock, env: { SIGNING_KEK: kek } });
    const before = await first.client.signAttestation(request(clock));
    await first.service.stop();

    const second = await startTestSigning(db.url, { clock, env: { SIGNING_KEK: kek } });
    try {
      expect((await second.client.signAttestation(request(clock))).kid).toBe(before.kid);
      expect(await checkToken(second.client, before.token, clock)).toMatchObject({ kind: "valid", replayed: false });
    } finally {
      await second.service.stop();
    }
  });

  it("refuse to start under another KEK, naming both KEK ids", async () => {
    const other = testKek();
    await expect(startTestSigning(db.url, { clock, env: { SIGNING_KEK: other } })).rejects.toThrow(
      `is sealed under KEK ${kekId(Buffer.from(kek, "base64"))}, but the configured SIGNING_KEK is ${kekId(Buffer.from(other, "base64"))}`,
    );
  });

  it("are never stored in clear: no column of any row holds the PKCS#8 key or its private scalar in any encoding", async () => {
    const running = await startTestSigning(db.url, { clock, env: { SIGNING_KEK: kek } });
    try {
      await running.client.rotateKeys({});
      const { token } = await running.client.signAttestation(request(clock));
      await checkToken(running.client, token, clock);
    } finally {
      await running.service.stop();
    }

    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const tables = (
        await client.query<{ table_name: string }>(
          `select table_name from information_schema.tables where table_schema = 'signing'`,
        )
      ).rows.map((row) => row.table_name);
      expect(tables).toEqual(expect.arrayContaining(["signing_key", "token_check", "mikro_orm_migrations"]));
      const rows: Record<string, unknown>[] = [];
      for (const table of tables) {
        // Each row twice: as the driver decodes it (bytea as bytes) and as PostgreSQL renders it as text.
        const result = await client.query(
          `select t.*, t::text as "row as text" from signing.${client.escapeIdentifier(table)} t`,
        );
        rows.push(...result.rows);
      }

      const keys = (
        await client.query<{ kid: string; sealed_private_key: Buffer; kek_id: string }>(
          `select kid, sealed_private_key, kek_id from signing.signing_key`,
        )
      ).rows;
      expect(keys).toHaveLength(2);
      const needles: Needle[] = keys.flatMap((key) => {
        const pkcs8 = openPrivateKey(Buffer.from(kek, "base64"), key.kid, {
          bytes: key.sealed_private_key,
          kekId: key.kek_id,
        });
        const d = Buffer.from(
          createPrivateKey({ key: pkcs8, format: "der", type: "pkcs8" }).export({ format: "jwk" }).d as string,
          "base64url",
        );
        expect(d).toHaveLength(32);
        return [
          { name: `${key.kid} PKCS#8`, bytes: pkcs8 },
          { name: `${key.kid} d`, bytes: d },
        ];
      });

      // The scan itself must see a secret where one is: planted copies in each encoding are found.
      const planted = needles[1]!;
      for (const form of encodings(planted)) {
        const plantedRow = { column: form.binary ?? `prefix ${form.text} suffix` };
        expect(findSecrets([plantedRow], [planted]), form.name).toContain(form.name);
      }
      expect(
        findSecrets(
          [{ pem: `-----BEGIN\n${needles[0]!.bytes.toString("base64").replace(/.{64}/g, "$&\n")}\n-----END` }],
          [needles[0]!],
        ).length,
      ).toBeGreaterThan(0);

      expect(rows.length).toBeGreaterThanOrEqual(5);
      expect(findSecrets(rows, needles)).toEqual([]);
    } finally {
      await client.end();
    }
  });

  it("use a clearly named development KEK when none is given in development, with a warning", async () => {
    const devDb = await createTestDatabase("signing_devkek");
    const logger = memoryLogger();
    const running = await startTestSigning(devDb.url, { clock, logger, env: { SVC_DEPLOYMENT: "development" } });
    try {
      const warning = logger.entries.find((entry) => entry.level === "warn" && /SIGNING_KEK/.test(entry.msg));
      expect(warning?.msg).toBe("SIGNING_KEK is not set: using the INSECURE built-in development value");
      const client = new pg.Client({ connectionString: devDb.url });
      await client.connect();
      const { rows } = await client.query(`select kek_id from signing.signing_key`);
      await client.end();
      expect(rows).toEqual([{ kek_id: kekId(developmentKek) }]);
    } finally {
      await running.service.stop();
      await devDb.drop();
    }
  });

  it("refuse to start in production without a KEK", async () => {
    await expect(startTestSigning(db.url, { clock, env: { SVC_DEPLOYMENT: "production" } })).rejects.toBeInstanceOf(
      ConfigError,
    );
  });
});
