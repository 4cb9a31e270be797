//! The Yahoo Streaming Benchmark's ad events (YSB's `setup.core` generator): campaigns of ads
//! with UUID ids, each event naming an ad and an event type, its time advancing at a fixed rate.
//!
//! The ids come from the seed: campaign `c`'s and ad `k`'s 36-byte UUID-like strings are
//! drawn from sub-streams of their own, so they are the same for every instance of a run and
//! cost no memory per ad. Ad `k` belongs to campaign `⌊k / ads_per_campaign⌋`, as YSB
//! partitions its ad list by tens. Events are a [`SyntheticSource`] over the ads (its key is
//! the ad's index), which gives popularity, time, disorder and watermarks; on top, each event
//! draws its type, and only the events of the listed types and of this instance's campaigns
//! are delivered. Every watermark is delivered, as Flink broadcasts watermarks to every
//! subtask after a `keyBy`.

use std::iter::FusedIterator;
use std::sync::Arc;

use super::distribution::{DistributionError, GapDistributionSpec, KeyDistributionSpec};
use super::element::{StreamElement, WatermarkPolicy};
use super::random::Rng;
use super::subtask::SubtaskRouter;
use super::synthetic::{SyntheticSource, SyntheticSpec};
use crate::key::Key;

/// Sub-streams of the seed (beside the synthetic source's 0 to 3).
const TYPE_STREAM: u64 = 0x7953_6201;
const CAMPAIGN_ID_STREAM: u64 = 0x7953_6202;
const AD_ID_STREAM: u64 = 0x7953_6203;

/// Bytes of an id: a UUID's text, `8-4-4-4-12` hex digits.
pub const ID_BYTES: usize = 36;

/// YSB's `event_type`, drawn uniformly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdEventType {
    /// An ad was shown (the only type YSB's query counts).
    View,
    /// An ad was clicked.
    Click,
    /// A purchase followed an ad.
    Purchase,
}

impl AdEventType {
    /// Every type, in YSB's order.
    pub const ALL: [AdEventType; 3] =
        [AdEventType::View, AdEventType::Click, AdEventType::Purchase];

    /// The type's name in YSB's events and in configs.
    pub fn name(self) -> &'static str {
        match self {
            AdEventType::View => "view",
            AdEventType::Click => "click",
            AdEventType::Purchase => "purchase",
        }
    }

    /// The type named `name`, if any.
    pub fn from_name(name: &str) -> Option<AdEventType> {
        AdEventType::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// The campaign and ad ids of a YSB setup, derived from a seed.
#[derive(Debug, Clone)]
pub struct YsbIds {
    campaigns: Vec<Key>,
    ads_per_campaign: u64,
    ad_seed: u64,
}

/// Writes a version-4 UUID's text made of the next 128 bits of `rng`.
fn write_uuid(rng: &mut Rng, out: &mut [u8; ID_BYTES]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&rng.next_u64().to_be_bytes());
    bytes[8..].copy_from_slice(&rng.next_u64().to_be_bytes());
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let mut j = 0;
    for (i, b) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out[j] = b'-';
            j += 1;
        }
        out[j] = HEX[usize::from(b >> 4)];
        out[j + 1] = HEX[usize::from(b & 0x0f)];
        j += 2;
    }
}

impl YsbIds {
    /// The ids of `campaigns` campaigns of `ads_per_campaign` ads each (both at least 1).
    pub fn new(seed: u64, campaigns: u64, ads_per_campaign: u64) -> Self {
        let campaign_seed = Rng::substream(seed, CAMPAIGN_ID_STREAM).next_u64();
        let campaigns = (0..campaigns)
            .map(|c| {
                let mut id = [0u8; ID_BYTES];
                write_uuid(&mut Rng::substream(campaign_seed, c), &mut id);
                Key::Str(Arc::from(std::str::from_utf8(&id).expect("ASCII hex")))
            })
            .collect();
        YsbIds {
            campaigns,
            ads_per_campaign: ads_per_campaign.max(1),
            ad_seed: Rng::substream(seed, AD_ID_STREAM).next_u64(),
        }
    }

    /// Number of campaigns.
    pub fn campaigns(&self) -> u64 {
        self.campaigns.len() as u64
    }

    /// Number of ads, all campaigns together.
    pub fn ads(&self) -> u64 {
        self.campaigns() * self.ads_per_campaign
    }

    /// The campaign of ad `ad`.
    #[inline]
    pub fn campaign_of(&self, ad: u64) -> usize {
        (ad / self.ads_per_campaign) as usize
    }

    /// Campaign `c`'s id as the window's key (a Java `String`).
    #[inline]
    pub fn campaign(&self, c: usize) -> &Key {
        &self.campaigns[c]
    }

    /// Ad `ad`'s id, computed (no table is kept).
    #[inline]
    pub fn ad_id(&self, ad: u64) -> [u8; ID_BYTES] {
        let mut id = [0u8; ID_BYTES];
        write_uuid(&mut Rng::substream(self.ad_seed, ad), &mut id);
        id
    }
}

/// Which part of the campaigns an instance gets: Flink's `KeyGroupRangeAssignment`, as a
/// `keyBy(campaign_id)` with `instances` subtasks and `max_parallelism` key groups assigns
/// them; `true` for the campaigns of `instance`.
pub fn campaigns_of_instance(
    ids: &YsbIds,
    instance: u32,
    instances: u32,
    max_parallelism: u32,
) -> Vec<bool> {
    let exchange = SubtaskRouter::new(instances, max_parallelism);
    let instance = instance % exchange.parallelism();
    (0..ids.campaigns.len())
        .map(|c| exchange.subtask_of(ids.campaign(c)) == Some(instance))
        .collect()
}

/// What a [`YsbSource`] generates.
#[derive(Debug, Clone, PartialEq)]
pub struct YsbSpec {
    /// Number of campaigns (YSB: 100).
    pub campaigns: u64,
    /// Ads per campaign (YSB: 10).
    pub ads_per_campaign: u64,
    /// Which ad an event names, over the ads `0 .. campaigns × ads_per_campaign` (YSB:
    /// uniform).
    pub ads: KeyDistributionSpec,
    /// Number of events the generator draws, of every type and campaign; `None`: endless.
    pub events: Option<u64>,
    /// Events per second of event time (YSB's throughput `-t`).
    pub events_per_second: f64,
    /// Event time of the first event, ms.
    pub start_time: i64,
    /// Share of events delivered late, as for a synthetic source.
    pub out_of_order_fraction: f64,
    /// Largest delay of a late event, ms, as for a synthetic source.
    pub max_delay: i64,
    /// When watermarks are emitted.
    pub watermarks: WatermarkPolicy,
}

impl YsbSpec {
    /// The unfiltered events: a synthetic source over the ads, its key the ad's index; an
    /// error when a parameter is out of range.
    pub fn events_source(&self, seed: u64) -> Result<SyntheticSource, DistributionError> {
        if !(self.events_per_second.is_finite() && self.events_per_second > 0.0) {
            return Err(DistributionError::Parameter {
                parameter: "events_per_second",
                allowed: "> 0".into(),
                got: self.events_per_second.to_string(),
            });
        }
        SyntheticSource::new(
            SyntheticSpec {
                key_space: self.campaigns.saturating_mul(self.ads_per_campaign),
                keys: self.ads.clone(),
                gaps: GapDistributionSpec::Constant(1000.0 / self.events_per_second),
                events: self.events,
                out_of_order_fraction: self.out_of_order_fraction,
                max_delay: self.max_delay,
                watermarks: self.watermarks,
                string_keys: false,
                start_time: self.start_time,
            },
            seed,
        )
    }
}

/// YSB's ad events, filtered by type and by the instance's campaigns (see the module docs).
///
/// Each event's key is `Key::Long(ad index)`. Nothing is allocated per event.
#[derive(Debug)]
pub struct YsbSource {
    events: SyntheticSource,
    types: Rng,
    /// The event types delivered, indexed as [`AdEventType::ALL`].
    pass: [bool; 3],
    /// The campaigns delivered.
    mine: Vec<bool>,
    ads_per_campaign: u64,
}

impl YsbSource {
    /// The stream of `instance` (of `instances`, with Flink's `max_parallelism` key groups)
    /// for `seed`, delivering the events of the `types` given.
    pub fn new(
        spec: &YsbSpec,
        seed: u64,
        types: &[AdEventType],
        instance: u32,
        instances: u32,
        max_parallelism: u32,
    ) -> Result<Self, DistributionError> {
        let events = spec.events_source(seed)?;
        let ids = YsbIds::new(seed, spec.campaigns, spec.ads_per_campaign);
        Ok(YsbSource {
            events,
            types: Rng::substream(seed, TYPE_STREAM),
            pass: AdEventType::ALL.map(|t| types.contains(&t)),
            mine: campaigns_of_instance(&ids, instance, instances, max_parallelism),
            ads_per_campaign: spec.ads_per_campaign.max(1),
        })
    }

    /// Events the generator drew so far, delivered or not.
    pub fn generated(&self) -> u64 {
        self.events.generated()
    }
}

impl Iterator for YsbSource {
    type Item = StreamElement;

    fn next(&mut self) -> Option<StreamElement> {
        loop {
            let element = self.events.next()?;
            let StreamElement::Event(event) = &element else {
                return Some(element);
            };
            let kind = self.types.below(3) as usize;
            let Key::Long(ad) = event.key else {
                unreachable!("the synthetic source's keys are longs")
            };
            let campaign = (ad as u64 / self.ads_per_campaign) as usize;
            if self.pass[kind] && self.mine[campaign] {
                return Some(element);
            }
        }
    }
}

impl FusedIterator for YsbSource {}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> YsbSpec {
        YsbSpec {
            campaigns: 100,
            ads_per_campaign: 10,
            ads: KeyDistributionSpec::Uniform,
            events: Some(30_000),
            events_per_second: 1000.0,
            start_time: 0,
            out_of_order_fraction: 0.0,
            max_delay: 0,
            watermarks: WatermarkPolicy::Punctuated {
                every: 100,
                out_of_orderness: 0,
            },
        }
    }

    fn ads(elements: &[StreamElement]) -> Vec<u64> {
        elements
            .iter()
            .filter_map(|e| match e {
                StreamElement::Event(e) => match e.key {
                    Key::Long(k) => Some(k as u64),
                    _ => None,
                },
                StreamElement::Watermark(_) => None,
            })
            .collect()
    }

    fn run(spec: &YsbSpec, seed: u64, types: &[AdEventType], i: u32, n: u32) -> Vec<StreamElement> {
        YsbSource::new(spec, seed, types, i, n, 128)
            .unwrap()
            .collect()
    }

    #[test]
    fn ids_are_uuid_text_from_the_seed() {
        let ids = YsbIds::new(7, 100, 10);
        assert_eq!((ids.campaigns(), ids.ads()), (100, 1000));
        let Key::Str(c) = ids.campaign(3) else {
            panic!("a string key")
        };
        for id in [c.as_bytes(), &ids.ad_id(999)[..]] {
            assert_eq!(id.len(), ID_BYTES);
            assert_eq!((id[8], id[13], id[18], id[23]), (b'-', b'-', b'-', b'-'));
            assert_eq!(id[14], b'4', "version 4");
            assert!(id
                .iter()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b) || *b == b'-'));
        }
        let again = YsbIds::new(7, 100, 10);
        assert_eq!(ids.campaign(3), again.campaign(3));
        assert_eq!(ids.ad_id(42), again.ad_id(42));
        assert_ne!(ids.ad_id(42), YsbIds::new(8, 100, 10).ad_id(42));
        let distinct: std::collections::HashSet<_> = (0..1000).map(|k| ids.ad_id(k)).collect();
        assert_eq!(distinct.len(), 1000);
        assert_eq!(ids.campaign_of(9), 0);
        assert_eq!(ids.campaign_of(10), 1);
    }

    #[test]
    fn same_seed_same_stream_and_types_are_a_third_each() {
        let views = run(&spec(), 1, &[AdEventType::View], 0, 1);
        assert_eq!(views, run(&spec(), 1, &[AdEventType::View], 0, 1));
        assert_ne!(views, run(&spec(), 2, &[AdEventType::View], 0, 1));
        let all = run(&spec(), 1, &AdEventType::ALL, 0, 1);
        assert_eq!(ads(&all).len(), 30_000);
        let share = ads(&views).len() as f64 / 30_000.0;
        assert!((share - 1.0 / 3.0).abs() < 0.02, "{share}");
        // Filtering keeps every watermark.
        let watermarks = |e: &[StreamElement]| {
            e.iter()
                .filter(|e| matches!(e, StreamElement::Watermark(_)))
                .count()
        };
        assert_eq!(watermarks(&views), watermarks(&all));
        assert_eq!(watermarks(&all), 30_000 / 100 + 1);
    }

    #[test]
    fn event_time_advances_at_the_rate() {
        let mut s = spec();
        s.events_per_second = 10_000.0;
        s.start_time = 5_000;
        let all = run(&s, 3, &AdEventType::ALL, 0, 1);
        let times: Vec<i64> = all
            .iter()
            .filter_map(|e| match e {
                StreamElement::Event(e) => Some(e.timestamp),
                StreamElement::Watermark(_) => None,
            })
            .collect();
        assert_eq!(times[0], 5_000);
        // ten events per ms (the clock adds 0.1 ms per event, in floating point)
        for ms in 5_001..7_999 {
            let n = times.iter().filter(|&&t| t == ms).count();
            assert!((9..=11).contains(&n), "{n} events at {ms}");
        }
        assert!((7_998..=7_999).contains(times.last().unwrap()));
    }

    #[test]
    fn uniform_ads_cover_every_ad_and_zipf_favours_the_first_campaigns() {
        let uniform = ads(&run(&spec(), 4, &AdEventType::ALL, 0, 1));
        let mut seen = vec![0u32; 1000];
        for &k in &uniform {
            seen[k as usize] += 1;
        }
        assert!(seen.iter().all(|&n| (5..=80).contains(&n)), "{seen:?}");
        let mut s = spec();
        s.ads = KeyDistributionSpec::Zipf { s: 1.2 };
        let zipf = ads(&run(&s, 4, &AdEventType::ALL, 0, 1));
        let first_campaign = zipf.iter().filter(|&&k| k < 10).count() as f64;
        assert!(first_campaign / zipf.len() as f64 > 0.5, "{first_campaign}");
    }

    #[test]
    fn instances_split_the_campaigns_like_a_key_by() {
        let whole = ads(&run(&spec(), 5, &[AdEventType::View], 0, 1));
        let ids = YsbIds::new(5, 100, 10);
        let mut parts = Vec::new();
        for i in 0..3 {
            let part = ads(&run(&spec(), 5, &[AdEventType::View], i, 3));
            let mine = campaigns_of_instance(&ids, i, 3, 128);
            assert!(part.iter().all(|&k| mine[ids.campaign_of(k)]));
            assert!(part.len() > whole.len() / 6, "instance {i}: {}", part.len());
            parts.push(part);
        }
        // The instances' events are the whole stream's, each exactly once.
        let mut union: Vec<u64> = parts.concat();
        let mut expected = whole.clone();
        union.sort_unstable();
        expected.sort_unstable();
        assert_eq!(union, expected);
        // The owner of a campaign is the subtask of its key group.
        let group = crate::key::key_group_for_hash(ids.campaign(0).java_hash(), 128);
        let owner = (group * 3 / 128) as usize;
        assert!(campaigns_of_instance(&ids, owner as u32, 3, 128)[0]);
    }

    #[test]
    fn a_bad_rate_is_refused() {
        let mut s = spec();
        s.events_per_second = 0.0;
        let err = YsbSource::new(&s, 0, &AdEventType::ALL, 0, 1, 128).unwrap_err();
        assert_eq!(err.to_string(), "events_per_second must be > 0, got 0");
    }
}
