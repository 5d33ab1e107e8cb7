/** A signed Rating (docs/scan.md "The Rating"). */
export const ratingSchema = {
  type: 'object',
  required: ['grade', 'score', 'algorithm', 'scanned_at', 'url', 'tests', 'signature'],
  properties: {
    grade: { enum: ['A+', 'A', 'A-', 'B+', 'B', 'B-', 'C+', 'C', 'C-', 'D+', 'D', 'D-', 'F'] },
    score: { type: 'integer' },
    algorithm: { type: 'string' },
    scanned_at: { type: 'string', format: 'date-time' },
    url: { type: 'string' },
    tests: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'pass', 'score_modifier', 'result'],
        properties: {
          name: { type: 'string' },
          pass: { type: 'boolean' },
          score_modifier: { type: 'integer' },
          result: { type: 'string' },
        },
      },
    },
    signature: {
      type: 'string',
      description: 'Compact JWS (ES256, typ keyplane-rating+jws) over the RFC 8785 form of the other members.',
    },
  },
} as const;
