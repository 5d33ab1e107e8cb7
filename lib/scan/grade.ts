/** Below this the bonuses (positive modifiers) do not count: the Observatory's extra-credit gate. */
export const MINIMUM_SCORE_FOR_EXTRA_CREDIT = 90;

const GRADE_CHART: ReadonlyMap<number, string> = new Map([
  [100, 'A+'],
  [95, 'A'],
  [90, 'A'],
  [85, 'A-'],
  [80, 'B+'],
  [75, 'B'],
  [70, 'B'],
  [65, 'B-'],
  [60, 'C+'],
  [55, 'C'],
  [50, 'C'],
  [45, 'C-'],
  [40, 'D+'],
  [35, 'D'],
  [30, 'D'],
  [25, 'D-'],
  [20, 'F'],
  [15, 'F'],
  [10, 'F'],
  [5, 'F'],
  [0, 'F'],
]);

export const GRADES = ['A+', 'A', 'A-', 'B+', 'B', 'B-', 'C+', 'C', 'C-', 'D+', 'D', 'D-', 'F'] as const;
export type Grade = (typeof GRADES)[number];

/**
 * Base 100 plus every modifier, but only the penalties unless those alone leave at least 90;
 * never below 0. The score is not capped (135 stays 135); the grade looks at the floor to a
 * multiple of 5, capped at 100.
 */
export function scoreModifiers(modifiers: number[]): { score: number; grade: Grade } {
  const withExtraCredit = modifiers.reduce((sum, m) => sum + m, 100);
  const uncurved = modifiers.filter((m) => m < 0).reduce((sum, m) => sum + m, 100);
  const score = Math.max(uncurved >= MINIMUM_SCORE_FOR_EXTRA_CREDIT ? withExtraCredit : uncurved, 0);
  return { score, grade: gradeForScore(score) };
}

export function gradeForScore(score: number): Grade {
  const clamped = Math.max(score, 0);
  const key = Math.min(clamped - (clamped % 5), 100);
  return GRADE_CHART.get(key) as Grade;
}
