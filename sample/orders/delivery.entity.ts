import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** What the outbox handler writes per delivered order. `orderId` is unique: redelivery is a no-op. */
@Entity('deliveries')
export class Delivery {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column('integer', { unique: true })
  orderId!: number;

  /** The outbox job that delivered it. */
  @Column('integer')
  jobId!: number;

  @CreateDateColumn()
  deliveredAt!: Date;
}
