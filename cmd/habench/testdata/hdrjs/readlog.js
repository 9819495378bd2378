// Reads habench latency.hlog files with hdr-histogram-js (HdrHistogram's TypeScript
// port: an implementation other than hdrhistogram-go, which wrote them) and prints what
// it read as JSON on stdout:
//
//   {"files": [{"file": F, "base_time_s": B, "intervals": [H...], "total": H}], "merged": H}
//
// H is one histogram as this library sees it: start_ms/end_ms (absolute, from the log's
// BaseTime), count, max (us), pct (its own getValueAtPercentile at 50, 95, 99, 99.9) and
// at_rank (the value at the rank hdrhistogram-go picks for each of 50, 95 and 99: Go
// rounds p/100*N to the nearest rank, HdrHistogram's Java and JS round it up; the value at
// Go's rank is asked of this library as the percentile 100*rank/N). "total" adds a file's
// intervals up, "merged" every file's: the logs merged across runs.
//
// Usage: node readlog.js latency.hlog...
"use strict";
const fs = require("fs");
const hdr = require("hdr-histogram-js");

const PCTS = [50, 95, 99, 99.9];
const RANKED = [50, 95, 99];

function describe(h) {
  const n = h.totalCount;
  const out = { start_ms: h.startTimeStampMsec, end_ms: h.endTimeStampMsec, count: n, max: h.maxValue, pct: {}, at_rank: {} };
  for (const p of PCTS) out.pct[String(p)] = n > 0 ? h.getValueAtPercentile(p) : 0;
  for (const p of RANKED) {
    if (n === 0) {
      out.at_rank[String(p)] = 0;
      continue;
    }
    const rank = Math.min(Math.max(Math.floor((p / 100) * n + 0.5), 1), n);
    out.at_rank[String(p)] = h.getValueAtPercentile((100 * rank) / n);
  }
  return out;
}

function newTotal() {
  return hdr.build({ bitBucketSize: 64, lowestDiscernibleValue: 1, highestTrackableValue: 3600 * 1e6, numberOfSignificantValueDigits: 3 });
}

const files = process.argv.slice(2);
if (files.length === 0) {
  process.stderr.write("usage: node readlog.js latency.hlog...\n");
  process.exit(2);
}
const merged = newTotal();
const out = { files: [], merged: null };
for (const file of files) {
  const content = fs.readFileSync(file, "utf8");
  const reader = new hdr.HistogramLogReader(content);
  const total = newTotal();
  const intervals = [];
  for (let h = reader.nextIntervalHistogram(); h !== null; h = reader.nextIntervalHistogram()) {
    intervals.push(describe(h));
    total.add(h);
    merged.add(h);
  }
  out.files.push({ file, base_time_s: reader.baseTimeSec, intervals, total: describe(total) });
}
out.merged = describe(merged);
process.stdout.write(JSON.stringify(out) + "\n");
