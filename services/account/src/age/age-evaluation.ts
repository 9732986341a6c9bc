/**
 * Age from a birth date, on calendar dates in UTC: a person is `years` old from the start of the day
 * of that birthday. Someone born on 29 February reaches an age on 1 March in a common year (the day
 * after 28 February, when the 29th does not exist).
 */
export type AgeVerdict = "over" | "under" | "unavailable";

interface CalendarDate {
  year: number;
  month: number;
  day: number;
}

const isoDate = /^(\d{4})-(\d{2})-(\d{2})$/;

export function parseCalendarDate(text: string): CalendarDate {
  const match = isoDate.exec(text);
  const date = match ? { year: Number(match[1]), month: Number(match[2]), day: Number(match[3]) } : undefined;
  if (
    date === undefined ||
    formatCalendarDate(utcDate(new Date(Date.UTC(date.year, date.month - 1, date.day)))) !== text
  ) {
    throw new RangeError(`not a calendar date (YYYY-MM-DD): ${JSON.stringify(text)}`);
  }
  return date;
}

const isLeapYear = (year: number) => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;

/** The day on which someone born on `birth` turns `years` old. */
function birthday(birth: CalendarDate, years: number): CalendarDate {
  const year = birth.year + years;
  if (birth.month === 2 && birth.day === 29 && !isLeapYear(year)) return { year, month: 3, day: 1 };
  return { year, month: birth.month, day: birth.day };
}

const compare = (a: CalendarDate, b: CalendarDate): number => a.year - b.year || a.month - b.month || a.day - b.day;

const utcDate = (at: Date): CalendarDate => ({
  year: at.getUTCFullYear(),
  month: at.getUTCMonth() + 1,
  day: at.getUTCDate(),
});

const formatCalendarDate = (date: CalendarDate): string =>
  `${String(date.year).padStart(4, "0")}-${String(date.month).padStart(2, "0")}-${String(date.day).padStart(2, "0")}`;

/** `over` when the person is at least `threshold` years old on the UTC date of `at`. */
export function ageVerdictAt(birthDate: string, threshold: number, at: Date): "over" | "under" {
  return compare(utcDate(at), birthday(parseCalendarDate(birthDate), threshold)) >= 0 ? "over" : "under";
}

/**
 * A birth date for a sandbox human of `age` whole years on `today`: half a year past that birthday,
 * so the age holds for months on either side of the creation date, whichever way a test moves its clock.
 */
export function birthDateForAge(age: number, today: Date): string {
  const anniversaryDay = new Date(Date.UTC(today.getUTCFullYear() - age, today.getUTCMonth(), today.getUTCDate()));
  return formatCalendarDate(utcDate(new Date(anniversaryDay.getTime() - 182 * 86_400_000)));
}
