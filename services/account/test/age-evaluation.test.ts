import { describe, expect, it } from "vitest";
import { ageVerdictAt, birthDateForAge, parseCalendarDate } from "../src/age/age-evaluation.ts";

describe("age evaluation", () => {
  it("is over from the birthday itself, under the day before", () => {
    expect(ageVerdictAt("2008-06-15", 18, new Date("2026-06-15T00:00:00Z"))).toBe("over");
    expect(ageVerdictAt("2008-06-15", 18, new Date("2026-06-14T23:59:59.999Z"))).toBe("under");
    expect(ageVerdictAt("2008-06-15", 18, new Date("2026-06-15T23:59:59Z"))).toBe("over");
    expect(ageVerdictAt("2008-06-15", 19, new Date("2026-06-15T12:00:00Z"))).toBe("under");
  });

  it("reads the calendar date of the instant in UTC", () => {
    // 23:30 in New York on the 14th is already the 15th in UTC.
    expect(ageVerdictAt("2008-06-15", 18, new Date("2026-06-14T23:30:00-04:00"))).toBe("over");
  });

  it("someone born on 29 February reaches an age on 1 March in a common year", () => {
    expect(ageVerdictAt("2008-02-29", 18, new Date("2026-02-28T12:00:00Z"))).toBe("under");
    expect(ageVerdictAt("2008-02-29", 18, new Date("2026-03-01T00:00:00Z"))).toBe("over");
  });

  it("and on 29 February itself in a leap year", () => {
    expect(ageVerdictAt("2008-02-29", 20, new Date("2028-02-28T23:59:59Z"))).toBe("under");
    expect(ageVerdictAt("2008-02-29", 20, new Date("2028-02-29T00:00:00Z"))).toBe("over");
    expect(ageVerdictAt("2000-02-29", 100, new Date("2100-02-28T12:00:00Z"))).toBe("under");
    expect(ageVerdictAt("2000-02-29", 100, new Date("2100-03-01T00:00:00Z"))).toBe("over");
  });

  it("refuses what is not a calendar date", () => {
    for (const text of ["2026-02-30", "2025-02-29", "2026-13-01", "26-01-01", "2026-1-1", ""])
      expect(() => parseCalendarDate(text)).toThrow(RangeError);
    expect(parseCalendarDate("2024-02-29")).toEqual({ year: 2024, month: 2, day: 29 });
  });

  it("a sandbox birth date gives exactly the asked age for months either side of its creation", () => {
    for (const created of ["2026-11-22T10:00:00Z", "2028-02-29T00:00:00Z", "2026-01-01T00:00:00Z"]) {
      const now = new Date(created);
      const birthDate = birthDateForAge(30, now);
      for (const offsetDays of [-170, 0, 170]) {
        const at = new Date(now.getTime() + offsetDays * 86_400_000);
        expect([birthDate, offsetDays, ageVerdictAt(birthDate, 30, at), ageVerdictAt(birthDate, 31, at)]).toEqual([
          birthDate,
          offsetDays,
          "over",
          "under",
        ]);
      }
    }
  });
});
