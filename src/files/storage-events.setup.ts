// The release phase points the bucket's upload events at the web process's ingress (radosgw:
// an SNS-compatible topic with an HTTP push endpoint, and a bucket notification for
// s3:ObjectCreated:*), or removes them when STORAGE_EVENTS_URL is unset. The topic is not
// persistent: radosgw's persistent topics retry without backoff and were seen to stop
// delivering; a lost event only delays a file until the polling watch finds it.
import { GetBucketNotificationConfigurationCommand, PutBucketNotificationConfigurationCommand } from '@aws-sdk/client-s3';
import { CreateTopicCommand, SNSClient } from '@aws-sdk/client-sns';
import type { Config } from '../../config/index.js';
import { storeClientSettings, type Storage } from '../shared/storage.js';
import { STORAGE_EVENTS_PATH, storageEventsToken } from './storage-events.routes.js';

export const NOTIFICATION_ID = 'guarantee-registry-uploads';

/** The URL radosgw posts to: STORAGE_EVENTS_URL plus the ingress path and its token. */
export function pushEndpoint(baseUrl: string, encryptionKey: Buffer): string {
  return `${baseUrl.replace(/\/+$/, '')}${STORAGE_EVENTS_PATH}/${storageEventsToken(encryptionKey)}`;
}

/** Sets (or, with no base URL, removes) the bucket's upload notifications; returns the topic ARN. */
export async function configureUploadEvents(
  storage: Storage,
  config: Pick<Config, 'S3_ENDPOINT' | 'S3_REGION' | 'AWS_ACCESS_KEY_ID' | 'AWS_SECRET_ACCESS_KEY'>,
  baseUrl: string | undefined,
  encryptionKey: Buffer,
): Promise<string | undefined> {
  if (!baseUrl) {
    await removeUploadEvents(storage);
    return undefined;
  }
  const sns = new SNSClient(storeClientSettings(config));
  try {
    // CreateTopic is idempotent by name and updates the attributes of an existing topic.
    const { TopicArn } = await sns.send(
      new CreateTopicCommand({
        Name: `${storage.bucket}-uploads`,
        Attributes: { 'push-endpoint': pushEndpoint(baseUrl, encryptionKey), persistent: 'false' },
      }),
    );
    if (!TopicArn) throw new Error('the store returned no topic ARN');
    await storage.client.send(
      new PutBucketNotificationConfigurationCommand({
        Bucket: storage.bucket,
        NotificationConfiguration: { TopicConfigurations: [{ Id: NOTIFICATION_ID, TopicArn, Events: ['s3:ObjectCreated:*'] }] },
      }),
    );
    return TopicArn;
  } finally {
    sns.destroy();
  }
}

/**
 * Removes this service's bucket notification, if any. S3 removes with an empty configuration,
 * which radosgw 16 refuses (MalformedXML); radosgw removes with DELETE ?notification, sent here
 * as the signed request of a GetBucketNotificationConfiguration whose method is changed.
 */
async function removeUploadEvents(storage: Storage): Promise<void> {
  const current = await storage.client.send(new GetBucketNotificationConfigurationCommand({ Bucket: storage.bucket }));
  if (!current.TopicConfigurations?.some((t) => t.Id === NOTIFICATION_ID)) return;
  try {
    await storage.client.send(new PutBucketNotificationConfigurationCommand({ Bucket: storage.bucket, NotificationConfiguration: {} }));
    return;
  } catch {
    // radosgw: fall through to its DELETE
  }
  const command = new GetBucketNotificationConfigurationCommand({ Bucket: storage.bucket });
  command.middlewareStack.add(
    (next) => async (args) => {
      (args.request as { method?: string }).method = 'DELETE';
      return next(args);
    },
    { step: 'build', name: 'deleteNotification' },
  );
  await storage.client.send(command);
}
