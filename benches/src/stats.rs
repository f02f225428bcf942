//! Statistics of repeated samples: the median and spread of a cell's RPC/s and of its ratios,
//! and the test of whether a change between two runs exceeds both runs' spreads.

use serde::{Deserialize, Serialize};

/// The distribution of a few samples: median, quartiles and extremes.
///
/// The spread the reports use is `min..=max` (the range of the samples): with a handful of
/// samples it is the honest interval, and every sample lies inside it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The median (the mean of the middle two for an even count).
    pub median: f64,
    /// The smallest sample.
    pub min: f64,
    /// The first quartile (linear interpolation between order statistics).
    pub q1: f64,
    /// The third quartile.
    pub q3: f64,
    /// The largest sample.
    pub max: f64,
}

impl Summary {
    /// Summarises `samples`; `None` when there are none or one is not a number.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        if samples.is_empty() || samples.iter().any(|s| s.is_nan()) {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        Some(Summary {
            median: quantile(&sorted, 0.5),
            min: sorted[0],
            q1: quantile(&sorted, 0.25),
            q3: quantile(&sorted, 0.75),
            max: sorted[sorted.len() - 1],
        })
    }

    /// The width of the spread, `max - min`.
    pub fn spread(&self) -> f64 {
        self.max - self.min
    }

    /// The interquartile range, `q3 - q1`.
    pub fn iqr(&self) -> f64 {
        self.q3 - self.q1
    }

    /// Whether the spread has `value` strictly inside it, so the samples disagree on which side
    /// of it the truth lies.
    pub fn straddles(&self, value: f64) -> bool {
        self.min < value && value < self.max
    }
}

/// The `q` quantile of sorted samples, interpolating linearly between neighbours (the method
/// of numpy's default and R's type 7).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let at = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (below, above) = (at.floor() as usize, at.ceil() as usize);
    sorted[below] + (sorted[above] - sorted[below]) * (at - below as f64)
}

/// Ratios of paired samples, `ours[i] / theirs[i]`: sample `i` of two frameworks ran back to
/// back, so pairing them cancels drift that hits both. Pairs with a zero denominator are left
/// out; samples beyond the shorter side are ignored.
pub fn paired_ratios(ours: &[f64], theirs: &[f64]) -> Vec<f64> {
    ours.iter()
        .zip(theirs)
        .filter(|&(_, &t)| t > 0.0)
        .map(|(o, t)| o / t)
        .collect()
}

/// How one median moved between a baseline run and a new run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Change {
    /// The baseline's median.
    pub before: f64,
    /// The new run's median.
    pub after: f64,
    /// `after - before`.
    pub delta: f64,
    /// Whether `|delta|` is larger than both runs' spreads (`max - min`): a change the noise
    /// of either run does not explain.
    pub flagged: bool,
    /// Whether the two runs' spreads overlap: the runs agree within their spreads.
    pub overlaps: bool,
}

impl Change {
    /// The change from `before` to `after`.
    pub fn between(before: &Summary, after: &Summary) -> Change {
        let delta = after.median - before.median;
        Change {
            before: before.median,
            after: after.median,
            delta,
            flagged: delta.abs() > before.spread() && delta.abs() > after.spread(),
            overlaps: before.min <= after.max && after.min <= before.max,
        }
    }

    /// The change relative to the baseline, in percent (0 when the baseline is 0).
    pub fn percent(&self) -> f64 {
        if self.before == 0.0 {
            0.0
        } else {
            100.0 * self.delta / self.before
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(Summary::of(&[3.0, 1.0, 2.0]).unwrap().median, 2.0);
        assert_eq!(Summary::of(&[4.0, 1.0, 3.0, 2.0]).unwrap().median, 2.5);
        assert_eq!(Summary::of(&[7.0]).unwrap().median, 7.0);
    }

    #[test]
    fn quartiles_interpolate_between_order_statistics() {
        // Sorted 10, 20, 30, 40, 50: q1 at position 1, q3 at position 3.
        let s = Summary::of(&[50.0, 10.0, 40.0, 20.0, 30.0]).unwrap();
        assert_eq!(
            (s.min, s.q1, s.median, s.q3, s.max),
            (10.0, 20.0, 30.0, 40.0, 50.0)
        );
        assert_eq!((s.iqr(), s.spread()), (20.0, 40.0));
        // Sorted 1, 2, 3, 4: q1 at position 0.75, q3 at position 2.25.
        let s = Summary::of(&[4.0, 3.0, 2.0, 1.0]).unwrap();
        assert_eq!((s.q1, s.q3, s.iqr()), (1.75, 3.25, 1.5));
    }

    #[test]
    fn no_summary_of_nothing_or_nan() {
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[1.0, f64::NAN]), None);
    }

    #[test]
    fn straddles_only_values_strictly_inside_the_spread() {
        let s = Summary::of(&[0.9, 1.0, 1.1]).unwrap();
        assert!(s.straddles(1.05));
        assert!(!s.straddles(1.1));
        assert!(!s.straddles(0.8));
    }

    #[test]
    fn ratios_pair_samples_and_skip_zero_denominators() {
        assert_eq!(
            paired_ratios(&[2.0, 3.0, 8.0], &[1.0, 0.0, 4.0, 9.0]),
            vec![2.0, 2.0]
        );
    }

    #[test]
    fn change_flagged_only_beyond_both_spreads() {
        let before = Summary::of(&[98.0, 100.0, 102.0]).unwrap(); // spread 4
        let narrow = Summary::of(&[109.0, 110.0, 111.0]).unwrap(); // spread 2, +10
        let wide = Summary::of(&[95.0, 110.0, 125.0]).unwrap(); // spread 30, +10
        let near = Summary::of(&[102.0, 103.0, 104.0]).unwrap(); // spread 2, +3
        let c = Change::between(&before, &narrow);
        assert_eq!(
            (c.before, c.after, c.delta, c.flagged),
            (100.0, 110.0, 10.0, true)
        );
        assert_eq!(c.percent(), 10.0);
        assert!(!c.overlaps);
        assert!(!Change::between(&before, &wide).flagged);
        assert!(Change::between(&before, &wide).overlaps);
        let c = Change::between(&before, &near);
        assert!(!c.flagged && c.overlaps);
        assert!(Change::between(&narrow, &before).flagged);
    }
}
