import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** What the confirmation email handler "sends" (records). `jobId` is unique: a job run twice sends once. */
@Entity('sent_emails')
export class SentEmail {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column('integer')
  orderId!: number;

  @Column('varchar', { length: 200 })
  to!: string;

  @Column('varchar', { length: 20 })
  reason!: string;

  @Column('integer', { unique: true })
  jobId!: number;

  @CreateDateColumn()
  sentAt!: Date;
}
