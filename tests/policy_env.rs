//! The environment's policies (`WIRECALL_POLICY_FILE`, then `WIRECALL_POLICY`) go over the
//! ones given in code, and an unreadable one fails `connect` with a message that names it.
//! One test in its own binary: it sets process-wide environment variables.

use std::time::Duration;

use wirecall::policy::{MethodPolicy, Policies, POLICY_ENV, POLICY_FILE_ENV};
use wirecall::{CallContext, Channel, Error, Server};

#[wirecall::service]
trait Clock {
    /// The milliseconds left of the call's deadline when the handler started.
    #[wirecall(timeout = "5s")]
    async fn remaining(&self) -> u64;
}

struct Handler;

impl Clock for Handler {
    async fn remaining(&self) -> u64 {
        CallContext::current()
            .and_then(|context| context.remaining())
            .map_or(u64::MAX, |left| left.as_millis() as u64)
    }
}

#[tokio::test]
async fn the_environment_goes_over_code_and_the_variable_over_the_file() {
    let server = Server::builder()
        .serve(ClockServer::new(Handler))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr();
    let in_code = Policies::new()
        .set(
            "Clock.remaining",
            MethodPolicy::new().with_timeout(Duration::from_secs(3)),
        )
        .unwrap();
    let remaining = |policies: Policies| async move {
        let channel = Channel::builder().policies(policies).connect(addr).await?;
        ClockClient::new(channel).remaining().await
    };

    // Code over the declaration.
    let left = remaining(in_code.clone()).await.unwrap();
    assert!((2_000..=3_000).contains(&left), "{left} ms");

    // The file over code.
    let dir = std::env::temp_dir().join(format!("wirecall-policy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("policies");
    std::fs::write(&file, "# ops\nClock.* timeout=1s\n").unwrap();
    std::env::set_var(POLICY_FILE_ENV, &file);
    let left = remaining(in_code.clone()).await.unwrap();
    assert!((500..=1_000).contains(&left), "{left} ms");

    // The variable over the file.
    std::env::set_var(POLICY_ENV, "Clock.remaining timeout=400ms");
    let left = remaining(in_code.clone()).await.unwrap();
    assert!(left <= 400, "{left} ms");

    // A malformed entry fails `connect`, naming where it is and what to write.
    std::env::set_var(POLICY_ENV, "Clock.remaining timeout=400");
    match remaining(in_code.clone()).await {
        Err(Error::Config(message)) => {
            assert!(message.contains("WIRECALL_POLICY, line 1"), "{message}");
            assert!(message.contains("unit"), "{message}");
        }
        other => panic!("expected a configuration error, got {other:?}"),
    }
    std::env::remove_var(POLICY_ENV);
    std::fs::remove_file(&file).unwrap();
    match remaining(in_code).await {
        Err(Error::Config(message)) => assert!(message.contains("policy file"), "{message}"),
        other => panic!("expected a configuration error, got {other:?}"),
    }
    std::env::remove_var(POLICY_FILE_ENV);
    std::fs::remove_dir_all(&dir).unwrap();
    server.shutdown().await;
}
