import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** An order, saved by `POST /orders` together with its outbox message. */
@Entity('orders')
export class Order {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column('varchar', { length: 200 })
  customer!: string;

  @Column('varchar', { length: 200 })
  item!: string;

  @Column('integer')
  quantity!: number;

  @CreateDateColumn()
  createdAt!: Date;
}
