/**
 * Text of `llmcp eval` and `llmcp report`: `key=field:value …` lines with the
 * fields and precision of the reference's chapter-34 (6 decimals) and
 * chapter-39 (9 decimals) reports, so the two can be compared line by line.
 */
import type { FinalEvaluation, RunReport } from '@llmcp/trainer';

const f6 = (x: number): string => x.toFixed(6);
const f9 = (x: number): string => x.toFixed(9);
const hex16 = (x: bigint): string => `0x${x.toString(16).padStart(16, '0')}`;
const list = (xs: readonly (string | number)[]): string => `[${xs.join(',')}]`;

/** The most document ids a line lists before it shortens the list (the reference's corpora have a dozen). */
export const MAX_LISTED_IDS = 24;

/**
 * A list of document ids as the reference prints it, shortened past {@link MAX_LISTED_IDS}: the first ones and how many
 * more (a corpus of thousands of documents would otherwise print every id on one line).
 *
 * @param ids - the ids.
 * @returns `[a,b,…]`, or `[a,b,…,+1176 more]`.
 */
export function idList(ids: readonly string[]): string {
  if (ids.length <= MAX_LISTED_IDS) return list(ids);
  return `[${ids.slice(0, MAX_LISTED_IDS).join(',')},…+${ids.length - MAX_LISTED_IDS} more]`;
}

/**
 * A string quoted and escaped the way the reference prints it (Rust's `{:?}`):
 * `"`, `\`, and control characters escaped, everything else as is.
 *
 * @param text - the text.
 * @returns the quoted text.
 */
export function debugQuote(text: string): string {
  let out = '"';
  for (const ch of text) {
    const c = ch.codePointAt(0) as number;
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (c === 0) out += '\\0';
    else if (c < 0x20 || (c >= 0x7f && c < 0xa0)) out += `\\u{${c.toString(16)}}`;
    else out += ch;
  }
  return `${out}"`;
}

/** Where an evaluation's inputs came from (the reference's `provenance=` line). */
export interface EvaluationProvenance {
  readonly corpus: string;
  readonly split: string;
  readonly tokenizer: string;
  readonly vocabulary: number;
}

function multiplicities(e: FinalEvaluation): string {
  return list(e.test.multiplicities.map((m) => `${m.slots}x${m.positions}`));
}

/**
 * The `slot_metric=` line (chapter 39, 9 decimals).
 *
 * @param e - a final evaluation.
 * @returns the line without a newline.
 */
export function slotMetricLine(e: FinalEvaluation): string {
  return (
    `slot_metric=unit:overlapping-window-target-slot decoder_window_slot_mean_nll_nats:${f9(e.decoder.meanNll)} decoder_window_slot_perplexity:${f9(e.decoder.perplexity)} ` +
    `bigram_window_slot_mean_nll_nats:${f9(e.bigram.meanNll)} bigram_window_slot_perplexity:${f9(e.bigram.perplexity)} window_slot_gap_nats:${f9(e.comparison.gap)} ` +
    `comparison_slot_set:${e.comparison.sameTargets ? 'shared-ordered-window-slots' : 'different-slots'} decoder_lower_on_fixture:${e.comparison.lowerLoss === 'selected-decoder'}`
  );
}

/**
 * The lines of `llmcp eval`: the chapter-34 report (selection, provenance,
 * baseline, test, decoder, bigram, comparison; 6 decimals), then the
 * chapter-39 slot-set and slot-metric lines (9 decimals).
 *
 * @param e - the final evaluation.
 * @param provenance - input identities.
 * @returns the lines, each without a newline.
 */
export function evaluationLines(e: FinalEvaluation, provenance: EvaluationProvenance): string[] {
  const s = e.selection;
  return [
    `selection=step:${s.step} validation_loss:${s.validationLoss === null ? 'unknown' : f6(s.validationLoss)} criterion:${s.criterion} test_partition_rejected:true`,
    `provenance=corpus:${provenance.corpus} split:${provenance.split} tokenizer:${provenance.tokenizer} vocabulary:${provenance.vocabulary} context:${e.test.contextLength}`,
    `baseline=alpha:${f6(e.baseline.alpha)} fitted_partition:${e.baseline.fittedPartition} documents:${e.baseline.documents} transitions:${e.baseline.transitions} frozen:true`,
    `test=documents:${e.test.documentIds.length} windows:${e.test.windows} batches:${e.test.batches} targets:${e.test.targets} gate_openings_before:${e.test.accessesBefore} gate_openings_after:${e.test.accesses} fingerprint:${e.test.fingerprint}`,
    `decoder=mean_nll:${f6(e.decoder.meanNll)} perplexity:${f6(e.decoder.perplexity)} total_nll:${f6(e.decoder.totalNll)} graphs:${e.decoder.graphs} parameters_unchanged:${e.decoder.parametersUnchanged} gradients_unchanged:${e.decoder.gradientsUnchanged}`,
    `bigram=mean_nll:${f6(e.bigram.meanNll)} perplexity:${f6(e.bigram.perplexity)} total_nll:${f6(e.bigram.totalNll)}`,
    `comparison=lower_loss:${e.comparison.lowerLoss} gap:${f6(e.comparison.gap)} same_targets:${e.comparison.sameTargets}`,
    `slots=documents:${idList(e.test.documentIds)} stride:${e.test.stride} window_target_slots:${e.test.targets} document_transition_occurrences:${e.test.transitions} transition_multiplicity_counts:${multiplicities(e)} window_slot_fingerprint:${e.test.fingerprint}`,
    slotMetricLine(e),
  ];
}

/**
 * The lines of `llmcp report`: the chapter-39 report (data, tokenizer, model,
 * training, test, slot_metric, transition_metric, evidence, checkpoint,
 * generation, history), same fields and precision as the reference.
 *
 * @param r - the run report.
 * @returns the lines, each without a newline.
 */
export function runReportLines(r: RunReport): string[] {
  const e = r.evaluation;
  const t = r.tokenizer;
  const m = r.model;
  const tr = r.training;
  const c = r.checkpoint;
  const g = r.generation;
  const none = (x: number | boolean | null): string => (x === null ? 'none' : String(x));
  const checkpoints = tr.checkpoints
    .map((k) => `${k.step}:${k.trainingLoss === null ? 'none' : f9(k.trainingLoss)}/${f9(k.validationLoss)}/${k.selected ? 'selected' : 'candidate'}`)
    .join(';');
  const isolated = e.test.accessesBefore === 0 && e.test.accesses === 1 && e.decoder.graphs === 0 && e.decoder.parametersUnchanged && e.decoder.gradientsUnchanged;
  return [
    `data=checksum:${r.data.checksum} split:${r.data.split} documents:${r.data.train.length}/${r.data.validation.length}/${r.data.test.length} train_ids:${idList(r.data.train)} validation_ids:${idList(r.data.validation)} test_ids:${idList(r.data.test)}`,
    `tokenizer=layout:${none(t.layout)} requested:${none(t.requestedMerges)} learned:${none(t.learnedMerges)} training_only:${none(t.trainingOnly)} vocabulary:${t.vocabularySize} encoded_tokens:${list(t.encodedTokens)}`,
    `model=layers:${m.layers} heads:${m.heads} width:${m.width} feed_forward:${m.feedForward} context:${m.context} parameters:${m.parameters} update_batch_size:${m.updateBatchSize} evaluation_batch_size:${m.evaluationBatchSize} windows:${list(m.windows)} evaluation_batches:${list(m.evaluationBatches)}`,
    `training=updates:${tr.updates} seed:${tr.seed} checkpoints:${checkpoints} selected:${tr.selectedStep} validation:${tr.selectedValidationLoss === null ? 'unknown' : f9(tr.selectedValidationLoss)} optimizer:${tr.optimizerStep} replay_bitwise:${tr.replayBitwise === null ? 'not-run' : tr.replayBitwise}`,
    `test=access:${e.test.accesses} documents:${idList(e.test.documentIds)} stride:${e.test.stride} windows:${e.test.windows} batches:${e.test.batches} window_target_slots:${e.test.targets} document_transition_occurrences:${e.test.transitions} transition_multiplicity_counts:${multiplicities(e)} window_slot_fingerprint:${e.test.fingerprint} no_grad:${e.decoder.graphs === 0} unchanged:${e.decoder.parametersUnchanged && e.decoder.gradientsUnchanged}`,
    slotMetricLine(e),
    `transition_metric=unit:within-document-next-token-transition count:${e.test.transitions} context_policy:longest-available-causal-prefix-up-to-${e.test.contextLength} newest_position_only:true reported:false mean_nll:not-reported perplexity:not-reported`,
    `evidence=scope:single-run within_run_selection_isolated:${isolated} independent_generalization_estimate:false architecture_superiority_evidence:false`,
    `checkpoint=bytes:${c.bytes} header:${c.header} records:${c.records} checksum:${c.checksum} selected:${c.selectedStep} optimizer:${c.optimizerStep} rng:${hex16(c.rngState)} bytes_roundtrip:${c.bytesRoundtrip} model_bits_exact:${c.modelBitsExact} optimizer_bits_exact:${c.optimizerBitsExact} tokenizer_exact:${c.tokenizerExact} logit_probe:${c.logitProbe} logit_probe_ids:${list(c.logitProbeIds)} prompt_logits_bitwise:${c.promptLogitsBitwise}`,
    `generation=prompt:${g.prompt} prompt_ids:${list(g.promptIds)} temperature:${g.temperature.toFixed(1)} top_k:${g.topK ?? 'all'} seed:${g.seed} generated:${list(g.generated)} text:${g.text === null ? 'invalid-utf8' : debugQuote(g.text)} prefixes:${list(g.prefixes)} stop:${g.stop} prefill:${g.prefill} decode:${g.decode} final_cache:${g.finalCache} cached_scores:${g.cachedScores} calculated_complete_prefix_scores:${g.completePrefixScores} rng_initial:${hex16(g.rngInitial)} rng_final:${hex16(g.rngFinal)} tokens_exact:${g.tokensExact} decisions_bitwise:${g.decisionsBitwise} rng_exact:${g.rngExact}`,
    `history=window_slot_unit:overlapping-window-target-slot window_target_slots:${e.test.targets} document_transition_occurrences:${e.test.transitions} bigram_context_tokens:1 decoder_context_capacity:${m.context} decoder_window_slot_context_lengths:${list(e.test.slotContextLengths)} bigram_window_slot_mean_nll_nats:${f9(e.bigram.meanNll)} decoder_window_slot_mean_nll_nats:${f9(e.decoder.meanNll)} window_slot_gap_nats:${f9(e.comparison.gap)}`,
  ];
}
