//! A workload's states in different stores: each request goes to the store its state is
//! placed in (a window's state in embedded RocksDB, a lookup table in a Redis Cluster), the
//! states nobody placed to the run's own store. A trace is unchanged: requests already name
//! their state.

use std::path::Path;

use gadget::access::{Op, StateId};

use super::{open_store, Store, StoreError, StoreKind, StoreSettings};

/// Opens `kind` with one keyspace per entry of `states` under `dir`, its states placed in
/// stores of their own where `settings.routes` says ([`RoutedStore`]), else the one store.
pub fn open(
    kind: StoreKind,
    dir: &Path,
    states: &[String],
    settings: &StoreSettings,
) -> Result<Box<dyn Store>, StoreError> {
    if settings.routes.is_empty() {
        open_store(kind, dir, states, settings)
    } else {
        Ok(Box::new(RoutedStore::open(kind, dir, states, settings)?))
    }
}

/// Several stores behind one: state by state, each request to its state's store.
pub struct RoutedStore {
    stores: Vec<Box<dyn Store>>,
    /// Each store's name as results show it: the run's store by its kind, the others by
    /// their config name.
    names: Vec<String>,
    /// Per state of the workload: its store and its index there.
    route: Vec<(usize, StateId)>,
    /// Stores holding batched writes not committed yet.
    batched: Vec<bool>,
    name: &'static str,
    emulated: &'static [Op],
}

impl RoutedStore {
    /// Opens the run's store (`kind`, `settings`, under `dir`) for the states no route names
    /// and each route's store for its states (its files under `dir/NAME`).
    pub fn open(
        kind: StoreKind,
        dir: &Path,
        states: &[String],
        settings: &StoreSettings,
    ) -> Result<RoutedStore, StoreError> {
        let routes = &settings.routes;
        let mut per_store: Vec<Vec<String>> = vec![Vec::new(); routes.len() + 1];
        let mut route = Vec::with_capacity(states.len());
        for state in states {
            let store = routes
                .iter()
                .position(|r| r.states.contains(state))
                .map_or(0, |i| i + 1);
            route.push((store, per_store[store].len() as StateId));
            per_store[store].push(state.clone());
        }
        let plain = StoreSettings {
            routes: Vec::new(),
            ..settings.clone()
        };
        let mut stores = vec![open_store(kind, dir, &per_store[0], &plain)?];
        let mut names = vec![kind.name().to_string()];
        for (r, its_states) in routes.iter().zip(&per_store[1..]) {
            let sub = dir.join(&r.name);
            std::fs::create_dir_all(&sub).map_err(|e| StoreError::Open {
                store: r.kind.name(),
                path: sub.clone(),
                message: e.to_string(),
            })?;
            let placed = StoreSettings {
                instance: settings.instance,
                stop: settings.stop.clone(),
                routes: Vec::new(),
                ..r.settings.clone()
            };
            stores.push(open_store(r.kind, &sub, its_states, &placed)?);
            names.push(r.name.clone());
        }
        let mut kinds: Vec<&str> = Vec::new();
        for s in &stores {
            if !kinds.contains(&s.name()) {
                kinds.push(s.name());
            }
        }
        let mut emulated: Vec<Op> = Vec::new();
        for op in Op::ALL {
            if stores.iter().any(|s| s.emulated().contains(&op)) {
                emulated.push(op);
            }
        }
        Ok(RoutedStore {
            batched: vec![false; stores.len()],
            stores,
            names,
            route,
            // once per run: a store's name and ops live as long as the process
            name: Box::leak(kinds.join("+").into_boxed_str()),
            emulated: Box::leak(emulated.into_boxed_slice()),
        })
    }

    /// The store of `state` and the state's index there.
    fn to(&mut self, state: StateId) -> Result<(&mut dyn Store, StateId), StoreError> {
        let &(store, local) = self
            .route
            .get(state as usize)
            .ok_or(StoreError::UnknownState {
                state,
                states: self.route.len(),
            })?;
        Ok((self.stores[store].as_mut(), local))
    }
}

impl Store for RoutedStore {
    fn name(&self) -> &'static str {
        self.name
    }

    fn get(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        let (s, local) = self.to(state)?;
        s.get(local, key)
    }

    fn put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        let (s, local) = self.to(state)?;
        s.put(local, key, value)
    }

    fn merge(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        let (s, local) = self.to(state)?;
        s.merge(local, key, value)
    }

    fn delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        let (s, local) = self.to(state)?;
        s.delete(local, key)
    }

    fn seek(&mut self, state: StateId, key: &[u8]) -> Result<Option<usize>, StoreError> {
        let (s, local) = self.to(state)?;
        s.seek(local, key)
    }

    fn next(&mut self, state: StateId) -> Result<Option<usize>, StoreError> {
        let (s, local) = self.to(state)?;
        s.next(local)
    }

    fn batch_put(&mut self, state: StateId, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        if let Some(&(store, _)) = self.route.get(state as usize) {
            self.batched[store] = true;
        }
        let (s, local) = self.to(state)?;
        s.batch_put(local, key, value)
    }

    fn batch_delete(&mut self, state: StateId, key: &[u8]) -> Result<(), StoreError> {
        if let Some(&(store, _)) = self.route.get(state as usize) {
            self.batched[store] = true;
        }
        let (s, local) = self.to(state)?;
        s.batch_delete(local, key)
    }

    /// Commits the batch of every store that holds batched writes (each atomically, not all
    /// together: stores share no transactions); with none, the run's own store commits.
    fn batch_commit(&mut self) -> Result<(), StoreError> {
        if !self.batched.contains(&true) {
            return self.stores[0].batch_commit();
        }
        for (store, batched) in self.stores.iter_mut().zip(&mut self.batched) {
            if std::mem::take(batched) {
                store.batch_commit()?;
            }
        }
        Ok(())
    }

    fn range_query(
        &mut self,
        state: StateId,
        start: &[u8],
        end: &[u8],
    ) -> Result<usize, StoreError> {
        let (s, local) = self.to(state)?;
        s.range_query(local, start, end)
    }

    fn range_delete(&mut self, state: StateId, start: &[u8], end: &[u8]) -> Result<(), StoreError> {
        let (s, local) = self.to(state)?;
        s.range_delete(local, start, end)
    }

    fn open_state(&mut self, state: StateId, name: &str) -> Result<(), StoreError> {
        let (s, local) = self.to(state)?;
        s.open_state(local, name)
    }

    /// Drops the state in the store it lives in, as that store drops it.
    fn drop_state(&mut self, state: StateId) -> Result<(), StoreError> {
        let (s, local) = self.to(state)?;
        s.drop_state(local)
    }

    fn flush_state(&mut self, state: StateId) -> Result<(), StoreError> {
        let (s, local) = self.to(state)?;
        s.flush_state(local)
    }

    fn checkpoint_state(&mut self, state: StateId) -> Result<(), StoreError> {
        let (s, local) = self.to(state)?;
        s.checkpoint_state(local)
    }

    fn store_of(&self, state: StateId) -> &str {
        self.route
            .get(state as usize)
            .map_or("", |&(store, _)| self.names[store].as_str())
    }

    fn emulated(&self) -> &'static [Op] {
        self.emulated
    }

    fn flush(&mut self) -> Result<(), StoreError> {
        for s in &mut self.stores {
            s.flush()?;
        }
        Ok(())
    }

    /// Every store's counters, summed by name.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        let mut out: Vec<(&'static str, u64)> = Vec::new();
        for s in &self.stores {
            for (name, value) in s.counters() {
                match out.iter_mut().find(|c| c.0 == name) {
                    Some(c) => c.1 += value,
                    None => out.push((name, value)),
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Route;

    fn route(name: &str, states: &[&str]) -> Route {
        Route {
            name: name.into(),
            kind: StoreKind::Memory,
            settings: StoreSettings::default(),
            states: states.iter().map(|s| s.to_string()).collect(),
            remote: None,
        }
    }

    #[test]
    fn each_state_goes_to_its_store_and_batches_commit_where_they_were_made() {
        let dir = tempfile::tempdir().unwrap();
        let settings = StoreSettings {
            routes: vec![route("table", &["ad-campaigns", "campaign-windows"])],
            ..StoreSettings::default()
        };
        let states: Vec<String> = ["window-contents", "ad-campaigns", "campaign-windows"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut s = RoutedStore::open(StoreKind::Memory, dir.path(), &states, &settings).unwrap();
        assert_eq!(s.store_of(0), "memory");
        assert_eq!(s.store_of(1), "table");
        assert_eq!(s.store_of(2), "table");
        s.put(1, b"ad", b"campaign").unwrap();
        assert_eq!(s.get(1, b"ad").unwrap(), Some(8));
        assert_eq!(
            s.get(0, b"ad").unwrap(),
            None,
            "another store, another keyspace"
        );
        assert_eq!(
            s.get(2, b"ad").unwrap(),
            None,
            "another state of the same store"
        );
        s.batch_put(2, b"c:10", b"7").unwrap();
        assert_eq!(s.get(2, b"c:10").unwrap(), None);
        s.batch_commit().unwrap();
        assert_eq!(s.get(2, b"c:10").unwrap(), Some(1));
        s.merge(0, b"w", b"a").unwrap();
        s.merge(0, b"w", b"b").unwrap();
        assert_eq!(s.seek(0, b"").unwrap(), Some(3));
        assert!(matches!(
            s.get(3, b"x"),
            Err(StoreError::UnknownState {
                state: 3,
                states: 3
            })
        ));
    }

    #[test]
    fn a_drop_goes_to_its_states_store() {
        let dir = tempfile::tempdir().unwrap();
        let settings = StoreSettings {
            routes: vec![route("table", &["timers"])],
            ..StoreSettings::default()
        };
        let states = vec!["window-contents".to_string(), "timers".to_string()];
        let mut s = RoutedStore::open(StoreKind::Memory, dir.path(), &states, &settings).unwrap();
        super::super::contract::a_drop_empties_its_state_and_nothing_else(&mut s);
        super::super::contract::a_flush_and_a_checkpoint_keep_every_entry_and_iterator(&mut s);
        s.put(1, b"t", b"1").unwrap();
        s.open_state(0, "window-contents-2").unwrap();
        s.drop_state(1).unwrap();
        assert_eq!(s.get(1, b"t").unwrap(), None);
    }
}
