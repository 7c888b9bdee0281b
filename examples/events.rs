//! Typed events: a `UserEvents` contract, two subscriptions (billing and mail) that each
//! receive every event, a flaky handler that succeeds on its retry, and a poison event that
//! ends in the dead letters with its reason.
//!
//! ```sh
//! cargo run --example events                                        # in-process, no broker
//! cargo run --example events --features rabbitmq -- --broker amqp://127.0.0.1:5672
//! ```

use std::process::ExitCode;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use wirecall::events::{EventBus, EventContext, RetryPolicy, SubscriptionConfig};

/// A user, as the services of the other examples know it.
#[wirecall::message]
#[derive(Clone, PartialEq)]
pub struct User {
    /// The user's id.
    pub id: u64,
    /// Their name.
    pub name: String,
}

/// What happens to users; every subscription receives every event.
#[wirecall::events]
pub trait UserEvents {
    /// A user signed up.
    async fn user_created(&self, user: User) -> Result<(), String>;
    /// A user left.
    async fn user_deleted(&self, id: u64);
}

/// Bills new users; the first attempt at every event fails, as a flaky database would.
#[derive(Default)]
struct Billing {
    handled: AtomicU32,
}

impl UserEvents for Billing {
    async fn user_created(&self, user: User) -> Result<(), String> {
        let context = EventContext::current().expect("inside a handler");
        if user.name == "mallory" {
            return Err("refusing to bill mallory".to_owned());
        }
        if context.attempt == 1 {
            return Err("billing database busy".to_owned());
        }
        println!(
            "billing: account for {} (event {}, attempt {})",
            user.name, context.id, context.attempt
        );
        self.handled.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    async fn user_deleted(&self, id: u64) {
        println!("billing: closing the account of user {id}");
        self.handled.fetch_add(1, Ordering::Relaxed);
    }
}

/// Sends mail; never fails.
#[derive(Default)]
struct Mail {
    handled: AtomicU32,
}

impl UserEvents for Mail {
    async fn user_created(&self, user: User) -> Result<(), String> {
        println!("mail: welcome, {}", user.name);
        self.handled.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    async fn user_deleted(&self, id: u64) {
        println!("mail: goodbye, user {id}");
        self.handled.fetch_add(1, Ordering::Relaxed);
    }
}

/// Publishes a few user events to two subscriptions and shows retries and dead letters.
#[derive(clap::Parser)]
#[command(
    name = "events",
    override_usage = "cargo run --example events -- [OPTIONS]"
)]
struct Options {
    /// A RabbitMQ AMQP URL (needs `--features rabbitmq`); in-process when absent
    #[arg(long)]
    broker: Option<String>,
}

async fn connect(broker: Option<&str>) -> Result<EventBus, String> {
    let Some(url) = broker else {
        return Ok(EventBus::in_process());
    };
    #[cfg(feature = "rabbitmq")]
    return EventBus::rabbitmq(url).await.map_err(|error| {
        format!(
            "{error}\n\nstart a broker, for example with Debian's package:\n    \
             apt-get install rabbitmq-server && rabbitmq-server\n\
             (it listens on amqp://127.0.0.1:5672 with user guest), or run this example \
             without --broker to use the in-process bus"
        )
    });
    #[cfg(not(feature = "rabbitmq"))]
    return Err(format!(
        "--broker {url}: build with `--features rabbitmq` to use RabbitMQ"
    ));
}

#[tokio::main]
async fn main() -> ExitCode {
    let options: Options = clap::Parser::parse();
    let bus = match connect(options.broker.as_deref()).await {
        Ok(bus) => bus,
        Err(error) => {
            eprintln!("events: {error}");
            return ExitCode::FAILURE;
        }
    };
    match run(&bus).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("events: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(bus: &EventBus) -> Result<(), Box<dyn std::error::Error>> {
    // Quick retries so the example finishes in a moment; the defaults wait 1 s, 2 s, 4 s, ...
    let config = SubscriptionConfig::default().retry(RetryPolicy {
        max_attempts: 3,
        first_delay: Duration::from_millis(100),
        max_delay: Duration::from_secs(1),
    });
    let billing = Arc::new(Billing::default());
    let mail = Arc::new(Mail::default());
    let billing_subscription = bus
        .subscribe_with(
            "billing",
            UserEventsSubscriber::from_arc(Arc::clone(&billing)),
            config.clone(),
        )
        .await?;
    let mail_subscription = bus
        .subscribe_with(
            "mail",
            UserEventsSubscriber::from_arc(Arc::clone(&mail)),
            config,
        )
        .await?;

    let publisher = UserEventsPublisher::new(bus);
    for (id, name) in [(1, "ada"), (2, "grace"), (3, "mallory")] {
        publisher
            .user_created(User {
                id,
                name: name.to_owned(),
            })
            .await?;
    }
    publisher.user_deleted(2).await?;

    // billing: ada and grace (each on its second attempt) and the deletion; mallory fails
    // all three attempts. mail: all four.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut dead = Vec::new();
    while billing.handled.load(Ordering::Relaxed) < 3
        || mail.handled.load(Ordering::Relaxed) < 4
        || dead.is_empty()
    {
        if tokio::time::Instant::now() > deadline {
            return Err("the events were not all handled within 20 s".into());
        }
        dead.extend(
            bus.take_dead_letters(UserEventsPublisher::CONTRACT, "billing", 10)
                .await?,
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for letter in &dead {
        println!(
            "billing dead letter: {} {} after {} attempts ({}): {}",
            letter.envelope.event,
            letter.envelope.id,
            letter.envelope.attempts,
            letter.reason,
            letter.error
        );
    }
    billing_subscription.close().await;
    mail_subscription.close().await;
    for subscription in ["billing", "mail"] {
        bus.delete_subscription(UserEventsPublisher::CONTRACT, subscription)
            .await?;
    }
    bus.close().await;
    println!("done: billing handled 3, mail handled 4, 1 dead letter");
    Ok(())
}
