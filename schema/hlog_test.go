package schema

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// TestLatencyLogRoundTrip: a header and three intervals (one empty) written the way a run
// writes latency.hlog read back through hdrhistogram-go's log reader as the same
// histograms, times and base time; a last line cut short is left out, a corrupt one is
// an error naming the interval.
func TestLatencyLogRoundTrip(t *testing.T) {
	start := time.Date(2026, 12, 6, 7, 3, 39, 123_000_000, time.UTC)
	var hs []*hdrhistogram.Histogram
	for i, n := range []int{500, 0, 2000} {
		h := hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
		for j := 0; j < n; j++ {
			h.RecordValue(int64(200 + j*j%50_000 + i))
		}
		hs = append(hs, h)
	}
	var b bytes.Buffer
	if err := WriteLatencyLogHeader(&b, start); err != nil {
		t.Fatal(err)
	}
	var line []byte
	for i, h := range hs {
		var err error
		if line, err = AppendLatencyLogLine(line[:0], time.Duration(i)*time.Second, time.Second+time.Duration(i)*time.Millisecond, h); err != nil {
			t.Fatal(err)
		}
		b.Write(line)
	}
	content := b.String()
	for _, want := range []string{"#[StartTime: 1796540619.123 (seconds since epoch), 2026-12-06T07:03:39.123Z]\n",
		"#[BaseTime: 1796540619.123 (seconds since epoch)]\n", "\n\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
		"\n0.000,1.000,", fmt.Sprintf("\n2.000,1.002,%.3f,HISTF", float64(hs[2].Max())/1000)} {
		if !strings.Contains(content, want) {
			t.Errorf("log lacks %q:\n%s", want, content)
		}
	}
	log, err := ReadLatencyLog(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !log.Start.Equal(start) || len(log.Intervals) != 3 {
		t.Fatalf("read back start %v, %d intervals; want %v, 3", log.Start, len(log.Intervals), start)
	}
	for i, iv := range log.Intervals {
		if !iv.Histogram.Equals(hs[i]) {
			t.Errorf("interval %d: %d values, max %d; want %d, max %d", i, iv.Histogram.TotalCount(), iv.Histogram.Max(), hs[i].TotalCount(), hs[i].Max())
		}
		// hdrhistogram-go's reader truncates its times to the millisecond.
		if d := iv.From - time.Duration(i)*time.Second; d > 0 || d < -time.Millisecond {
			t.Errorf("interval %d from %v", i, iv.From)
		}
		if d := iv.Length - time.Second - time.Duration(i)*time.Millisecond; d > time.Millisecond || d < -time.Millisecond {
			t.Errorf("interval %d length %v", i, iv.Length)
		}
	}
	cut := content[:len(content)-20]
	if log, err := ReadLatencyLog([]byte(cut)); err != nil || len(log.Intervals) != 2 {
		t.Errorf("a last line cut short: %v, %d intervals; want the 2 whole ones", err, len(log.Intervals))
	}
	bad := strings.Replace(content, "\n1.000,", "\n1.000,1.000,0.000,HISTFAAAAnotbase64\n1.000,", 1)
	if _, err := ReadLatencyLog([]byte(bad)); err == nil || !strings.Contains(err.Error(), "interval 2") {
		t.Errorf("a corrupt line: %v; want an error naming interval 2", err)
	}
}

// BenchmarkLatencyLogLine is what latency.hlog costs a run per report interval: encoding
// one interval's histogram (1 us..1 h, 3 digits, as the workload keeps them) into its
// line. The interval holds n latencies spread log-uniformly over 0.3..300 ms (a loaded
// OLTP run), so every HDR bucket in that range is used. It runs on the reporting side
// (the coordinator, once per interval), never on the workers' path.
func BenchmarkLatencyLogLine(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("values=%d", n), func(b *testing.B) {
			h := hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
			for i := 0; i < n; i++ {
				h.RecordValue(int64(300 * math.Pow(1000, float64(i)/float64(n))))
			}
			var line []byte
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if line, err = AppendLatencyLogLine(line[:0], time.Second, time.Second, h); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(line)), "bytes/line")
		})
	}
}
