/**
 * Outcome names as the venue gives them. A market's two outcomes are YES (index 0) and NO (index 1) unless the venue
 * names them otherwise (markets.outcome_labels: ["Up", "Down"], two teams); then every surface shows the venue's
 * names — an outcome, a winner — and keeps the index beside them for machines. INVALID (a void) has no name.
 */

/** SQL: the name of outcome `index` (an SQL expression, 0 or 1) of market alias `m`. */
export function outcomeLabelSql(m: string, index: string): string {
  return `CASE WHEN ${m}.outcome_labels IS NULL OR len(${m}.outcome_labels) <> 2 THEN (CASE WHEN ${index} = 0 THEN 'YES' ELSE 'NO' END) ELSE ${m}.outcome_labels[(${index}) + 1] END`;
}

/** SQL: the winner's name from a resolution's winner (YES / NO / INVALID / NULL) and market alias `m`. */
export function winnerLabelSql(m: string, winner: string): string {
  return `CASE ${winner} WHEN 'YES' THEN ${outcomeLabelSql(m, '0')} WHEN 'NO' THEN ${outcomeLabelSql(m, '1')} ELSE ${winner} END`;
}

/** The same in TypeScript, for rows read without the SQL (labels: the market's outcome_labels or null). */
export function outcomeLabel(labels: readonly string[] | null | undefined, index: number): string {
  if (!labels || labels.length !== 2) return index === 0 ? 'YES' : 'NO';
  return labels[index]!;
}

export function winnerLabel(labels: readonly string[] | null | undefined, winner: string | null): string | null {
  if (winner === 'YES') return outcomeLabel(labels, 0);
  if (winner === 'NO') return outcomeLabel(labels, 1);
  return winner;
}
