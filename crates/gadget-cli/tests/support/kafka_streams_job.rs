//! The Kafka Streams reference job, built with Maven for the recorder tests.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds the agent and the Kafka Streams reference job of the project at `root`: the
/// agent's jar and the job's class path (which holds a Kafka broker too).
pub fn build(root: &Path) -> (PathBuf, String) {
    let dir = root.join("recorder");
    let status = Command::new("mvn")
        .args(["-B", "-q", "-Dstyle.color=never", "-Pkafka-streams"])
        .args(["-pl", "agent,kafka-streams", "package", "-f"])
        .arg(dir.join("pom.xml"))
        .status()
        .expect("running mvn");
    assert!(
        status.success(),
        "building the recorder and the Kafka Streams job failed"
    );
    let target = dir.join("kafka-streams/target");
    let deps = std::fs::read_to_string(target.join("classpath.txt")).unwrap();
    let classpath = format!(
        "{}:{}",
        target
            .join("gadget-recorder-kafka-streams-examples.jar")
            .display(),
        deps.trim()
    );
    (
        dir.join("agent/target/gadget-recorder-flink.jar"),
        classpath,
    )
}
