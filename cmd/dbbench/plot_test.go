package main

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWritePlot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.svg")
	points := []reportPoint{{1, 1000, 50}, {2, 250000, 12.5}, {3, 0, 0}, {4, 180000, 7000}}
	require.NoError(t, writePlot(path, points))
	data, err := os.ReadFile(path)
	require.NoError(t, err)

	// Well-formed XML whose root is an svg element with two polylines of
	// one vertex a point, inside the figure.
	var doc struct {
		XMLName   xml.Name `xml:"svg"`
		Polylines []struct {
			Points string `xml:"points,attr"`
		} `xml:"polyline"`
		Texts []string `xml:"text"`
	}
	require.NoError(t, xml.Unmarshal(data, &doc))
	require.Len(t, doc.Polylines, 2)
	for _, pl := range doc.Polylines {
		verts := strings.Fields(pl.Points)
		require.Len(t, verts, len(points))
		for _, v := range verts {
			var x, y float64
			_, err := fmt.Sscanf(v, "%g,%g", &x, &y)
			require.NoError(t, err, v)
			require.True(t, x >= marginL && x <= plotW-marginR, "x %v", x)
			require.True(t, y >= 0 && y <= plotH, "y %v", y)
		}
	}
	require.Contains(t, doc.Texts, "throughput")
	require.Contains(t, doc.Texts, "p99 latency")
	require.Contains(t, doc.Texts, "250k") // the throughput axis top

	// No points: still a valid figure, without lines.
	require.NoError(t, writePlot(path, nil))
	data, err = os.ReadFile(path)
	require.NoError(t, err)
	doc.Polylines = nil
	require.NoError(t, xml.Unmarshal(data, &doc))
	require.Empty(t, doc.Polylines)
}

func TestNiceCeil(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{
		{0, 1}, {-3, 1}, {1, 1}, {1.5, 2}, {2.2, 2.5}, {3, 5}, {7, 10}, {10, 10}, {180000, 200000}, {0.03, 0.05},
	} {
		require.InDelta(t, c.want, niceCeil(c.in), 1e-9, "niceCeil(%v)", c.in)
	}
}
